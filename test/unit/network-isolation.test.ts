import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { prop, readBicep } from '../helpers/bicep';

/*
 * VNET_ENABLED as the azd Flex Consumption quickstarts offer it (Azure-Samples/functions-quickstart-typescript-azd:
 * a subnet delegated to Microsoft.App/environments, private endpoints with their DNS zones, the storage account's
 * public network access off), and the costs the deployment caps. Bicep cannot be compiled here: the templates are
 * read and every expression that decides isolation is checked for both values of the switch.
 */
const root = resolve(__dirname, '../..');
const main = readBicep(root, 'infra/main.bicep');
const network = readBicep(root, 'infra/modules/network.bicep');
const storage = readBicep(root, 'infra/modules/storage.bicep');
const vaults = readBicep(root, 'infra/modules/key-vault.bicep');
const app = readBicep(root, 'infra/modules/function-app.bicep');
const scheduler = readBicep(root, 'infra/modules/durable-scheduler.bicep');
const monitoring = readBicep(root, 'infra/modules/monitoring.bicep');
const parameters = JSON.parse(readFileSync(join(root, 'infra/main.parameters.json'), 'utf8')).parameters;

/** A Bicep conditional `c ? a : b` evaluated for a boolean parameter's value (only the forms used here). */
function evaluate(expression: string, name: string, value: boolean): string {
  const m = new RegExp(`^(!?)${name} \\? (.+?) : (.+)$`).exec(expression.trim());
  if (!m) throw new Error(`not a conditional on ${name}: ${expression}`);
  return (m[1] ? !value : value) ? m[2] : m[3];
}

describe('network isolation (VNET_ENABLED)', () => {
  it('is a deployment setting, off by default, restored on any machine', () => {
    expect(parameters.vnetEnabled.value).toBe('${VNET_ENABLED=false}');
    expect(main.text).toMatch(/param vnetEnabled bool = false/);
    expect(main.outputs.find((o) => o.name === 'VNET_ENABLED')?.value).toBe('vnetEnabled');
    expect(main.modules.find((m) => m.path === 'modules/network.bicep')?.condition).toBe('vnetEnabled');
  });

  it('on: public network access off for storage and both Key Vaults; off: as before', () => {
    const storageModule = main.modules.find((m) => m.symbol === 'storage')?.body ?? '';
    const vaultModule = main.modules.find((m) => m.symbol === 'vaults')?.body ?? '';
    expect(prop(storageModule, 'publicAccess')).toBe('!vnetEnabled');
    expect(prop(vaultModule, 'publicAccess')).toBe('!vnetEnabled');
    const account = storage.resources.find((r) => r.type === 'Microsoft.Storage/storageAccounts')?.body ?? '';
    const vaultProps = /var properties = \{([\s\S]*?)\n\}/.exec(vaults.text)?.[1] ?? '';
    for (const [what, body] of [
      ['storage', account],
      ['key vault', vaultProps],
    ] as const) {
      const access = prop(body, 'publicNetworkAccess') as string;
      const acls = prop(body, 'networkAcls') as string;
      expect([what, evaluate(access, 'publicAccess', false)]).toEqual([what, "'Disabled'"]);
      expect([what, evaluate(access, 'publicAccess', true)]).toEqual([what, "'Enabled'"]);
      expect([what, evaluate(acls, 'publicAccess', false)]).toEqual([
        what,
        "{ defaultAction: 'Deny', bypass: 'None' }",
      ]);
    }
    // Both vaults are made from the one properties object.
    expect(
      vaults.resources
        .filter((r) => r.type === 'Microsoft.KeyVault/vaults')
        .map((r) => prop(r.body, 'properties')),
    ).toEqual(['properties', 'properties']);
  });

  it('on: a private endpoint, in its private DNS zone linked to the network, for blob, queue, table and each vault', () => {
    const endpoints = /var endpoints = \[([\s\S]*?)\n\]/.exec(network.text)?.[1] ?? '';
    const rows = [
      ...endpoints.matchAll(/name: '(\w+)', target: (\w+)\.id, group: '(\w+)', zone: '([^']+)'/g),
    ].map((m) => [m[1], m[2], m[3], m[4]]);
    expect(rows).toEqual([
      ['blob', 'storage', 'blob', 'privatelink.blob.${environment().suffixes.storage}'],
      ['queue', 'storage', 'queue', 'privatelink.queue.${environment().suffixes.storage}'],
      ['table', 'storage', 'table', 'privatelink.table.${environment().suffixes.storage}'],
      ['kv', 'credentials', 'vault', 'privatelink.vaultcore.azure.net'],
      ['kvs', 'sessions', 'vault', 'privatelink.vaultcore.azure.net'],
    ]);
    const byType = (t: string) => network.resources.filter((r) => r.type === t && !r.existing);
    expect(byType('Microsoft.Network/privateEndpoints')[0].loop).toBe('e in endpoints');
    expect(byType('Microsoft.Network/privateEndpoints/privateDnsZoneGroups')[0].loop).toBe(
      '(e, i) in endpoints',
    );
    expect(byType('Microsoft.Network/privateDnsZones')[0].loop).toBe('zone in zoneNames');
    expect(byType('Microsoft.Network/privateDnsZones/virtualNetworkLinks')[0].loop).toBe(
      '(zone, i) in zoneNames',
    );
    // Every zone an endpoint registers in is made and linked.
    const zones = /var zoneNames = \[([\s\S]*?)\n\]/.exec(network.text)?.[1] ?? '';
    for (const [, , , zone] of rows) expect(zones).toContain(`'${zone}'`);
    // The existing stores are the ones main.bicep deploys.
    const module = main.modules.find((m) => m.path === 'modules/network.bicep')?.body ?? '';
    expect(prop(module, 'storageAccountName')).toBe('storage.outputs.name');
    expect(prop(module, 'credentialsVaultName')).toBe('vaults.outputs.credentialsVaultName');
    expect(prop(module, 'sessionsVaultName')).toBe('vaults.outputs.sessionsVaultName');
  });

  it('on: the app joins a subnet delegated as Flex Consumption needs; its traffic out leaves from one static address', () => {
    const vnet = network.resources.find((r) => r.type === 'Microsoft.Network/virtualNetworks')?.body ?? '';
    expect(vnet).toContain("serviceName: 'Microsoft.App/environments'");
    expect(vnet).toContain('natGateway: { id: nat.id }');
    const module = main.modules.find((m) => m.symbol === 'app')?.body ?? '';
    expect(prop(module, 'subnetId')).toBe("vnetEnabled ? network.outputs.appSubnetId : ''");
    expect(app.resources.find((r) => r.symbol === 'app')?.body).toContain(
      'virtualNetworkSubnetId: empty(subnetId) ? null : subnetId',
    );
    // The scheduler answers only that address with isolation on; anyone (its role guarding it) with it off.
    const dts = main.modules.find((m) => m.path === 'modules/durable-scheduler.bicep')?.body ?? '';
    expect(prop(dts, 'allowedIpAddress')).toBe("vnetEnabled ? network.outputs.egressIpAddress : ''");
    expect(prop(scheduler.resources[0].body, 'ipAllowlist')).toBe(
      "empty(allowedIpAddress) ? ['0.0.0.0/0'] : ['${allowedIpAddress}/32']",
    );
    expect(main.outputs.find((o) => o.name === 'EGRESS_IP_ADDRESS')?.value).toBe(
      "vnetEnabled ? network.outputs.egressIpAddress : ''",
    );
  });
});

describe('costs capped', () => {
  it('Log Analytics has a daily cap, a deployment setting with a default (0: none)', () => {
    expect(parameters.logAnalyticsDailyCapGb.value).toBe('${LOG_ANALYTICS_DAILY_CAP_GB=1}');
    expect(main.text).toMatch(/param logAnalyticsDailyCapGb int = 1/);
    expect(prop(main.modules.find((m) => m.symbol === 'monitoring')?.body ?? '', 'dailyCapGb')).toBe(
      'logAnalyticsDailyCapGb',
    );
    const workspace = monitoring.resources.find((r) => r.type === 'Microsoft.OperationalInsights/workspaces');
    expect(prop(workspace?.body ?? '', 'workspaceCapping')).toBe(
      '{ dailyQuotaGb: dailyCapGb == 0 ? -1 : dailyCapGb }',
    );
    const deploy = readFileSync(join(root, 'docs/deploy.md'), 'utf8');
    for (const cost of [
      'always-ready',
      'LOG_ANALYTICS_DAILY_CAP_GB',
      'alert rules',
      'retention',
      'NAT gateway',
    ])
      expect([cost, deploy.includes(cost)]).toEqual([cost, true]);
  });
});
