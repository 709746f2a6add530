import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { createAccessLayer } from '../../shared/access';
import { loadConfig } from '../../shared/app';
import { streamSchema, type StreamDefinition } from '../../shared/streams';
import { paginate } from '../../shared/graphql/pager';
import { RequestRefused } from '../../shared/errors';
import { LocalFileSecretStore } from '../../shared/secrets';
import { keycloakAdmin, keycloakInfo, type KeycloakInfo } from './keycloak';
import { startKeycloakGraphql } from './graphql-server';

/* The production GraphQL client and pager with Keycloak-issued tokens, verified against Keycloak's JWKS. */
jest.setTimeout(60_000);

let kc: KeycloakInfo;
let api: Awaited<ReturnType<typeof startKeycloakGraphql>>;
let dir: string;
beforeAll(async () => {
  kc = keycloakInfo();
  kc.clientSecret = await (await keycloakAdmin(kc)).regenerateSecret('demo-sync');
  api = await startKeycloakGraphql(`${kc.url}/realms/${kc.realm}`);
  dir = await mkdtemp(join(tmpdir(), 'ti-conf-gql-'));
  await new LocalFileSecretStore(join(dir, 'secrets.json')).set('tenant-client-secret', kc.clientSecret);
});
afterAll(async () => {
  await api?.close();
  await rm(dir, { recursive: true, force: true });
});

const access = () =>
  createAccessLayer(
    loadConfig({
      TENANT_NAME: kc.realm,
      TENANT_BASE_URL: api.url,
      TENANT_AUTH_URL: kc.url,
      TENANT_CLIENT_ID: kc.clientId,
      LOCAL_SECRETS_FILE: join(dir, 'secrets.json'),
    }),
  );

it('reads every page with the M2M token; the API verifies it against Keycloak and sees the service account', async () => {
  const a = access();
  const who = await a.graphql.request('query Who { whoami }', { schema: z.object({ whoami: z.string() }) });
  expect(who.whoami).toBe('service-account-demo-sync');
  const ids: string[] = [];
  const stream = streamSchema.parse({
    name: 'controls',
    document:
      'query Controls($first: Int, $after: String) { controls(first: $first, after: $after) { edges { node { id status } } pageInfo { hasNextPage endCursor } } }',
    paths: {
      records: 'controls.edges',
      node: 'node',
      hasNextPage: 'controls.pageInfo.hasNextPage',
      endCursor: 'controls.pageInfo.endCursor',
    },
  }) as StreamDefinition;
  for await (const page of paginate(a.graphql, stream, { pageSize: 10 }))
    ids.push(...page.records.map((r) => (r as { id: string }).id));
  expect(ids).toHaveLength(25);
  expect(new Set(ids).size).toBe(25);
});

it('a mutation with the M2M credential is refused before the network', async () => {
  const a = access();
  const before = { ...api.stats };
  await expect(
    a.graphql.request('mutation Set { updateControl(id: "ctl-0001", input: { status: "done" }) { id } }'),
  ).rejects.toBeInstanceOf(RequestRefused);
  expect(api.stats).toEqual(before);
});
