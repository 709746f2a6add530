import { app } from '@azure/functions';
import { ADMIN_PAGE } from '../shared/admin/page';
import { httpDoor } from '../shared/app';

/** GET /api/manage (admin key): the admin page. */
app.http('managePage', {
  route: 'manage',
  methods: ['GET'],
  authLevel: 'admin',
  handler: httpDoor('admin page', async () => ({
    body: ADMIN_PAGE,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      // The page's key is in its URL: keep it out of Referer headers to the login link.
      'referrer-policy': 'no-referrer',
      'content-security-policy':
        "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'",
    },
  })),
});
