import { createLogger } from '../../shared/log';

describe('allow-listed logger', () => {
  it('drops every field not on the allow list, so tokens and variables cannot reach a line', () => {
    const lines: unknown[] = [];
    const log = createLogger((l) => lines.push(l));
    const data = {
      operation: 'Controls',
      attempt: 2,
      access_token: 'eyJ.secret',
      variables: { after: 'x' },
    } as Record<string, unknown>;
    log.log('info', 'graphql request', data as never);
    expect(lines).toEqual([{ level: 'info', message: 'graphql request', operation: 'Controls', attempt: 2 }]);
  });
});
