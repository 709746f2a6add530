/**
 * Which durable backend the deployed app runs, and the refusals that keep a package and a deployment on the same one.
 * The orchestrations' state lives in the backend: a package for the storage account on an app provisioned for the
 * Durable Task Scheduler gets an empty connection string and the host does not start; the other way round it starts
 * on Azure Storage beside a scheduler nobody reads. A switch made on purpose strands what was running in the old one.
 *
 * PROVISIONED_DURABLE_BACKEND is a Bicep output (infra/main.bicep): azd writes it into the environment after every
 * provision, and `azd env refresh` brings it to any other machine.
 */
export const DURABLE_BACKENDS = ['storage', 'scheduler'] as const;
export type DurableBackend = (typeof DURABLE_BACKENDS)[number];

/** DURABLE_BACKEND as azd hands it to a hook: unset is `storage`; anything else is refused by name. */
export function durableBackendOf(value: string | undefined, name = 'DURABLE_BACKEND'): DurableBackend {
  if (!value) return 'storage';
  if ((DURABLE_BACKENDS as readonly string[]).includes(value)) return value as DurableBackend;
  throw new Error(`${name}: "${value}" is not one of ${DURABLE_BACKENDS.join(', ')}`);
}

/** The backend a staged host.json runs on (tools/package.ts `hostJsonFor`). */
export function stagedBackendOf(host: unknown): DurableBackend {
  const type = (
    host as { extensions?: { durableTask?: { storageProvider?: { type?: unknown } } } } | undefined
  )?.extensions?.durableTask?.storageProvider?.type;
  return typeof type === 'string' && type.toLowerCase() === 'azuremanaged' ? 'scheduler' : 'storage';
}

/**
 * The preprovision and prepackage hooks: a DURABLE_BACKEND other than the deployed one is refused, both named, unless
 * the operator says it is meant (DURABLE_BACKEND_MIGRATE=true). Nothing to compare before the first provision.
 */
export function switchRefusal(env: Record<string, string | undefined>): string | undefined {
  if (!env.PROVISIONED_DURABLE_BACKEND) return undefined;
  const deployed = durableBackendOf(env.PROVISIONED_DURABLE_BACKEND, 'PROVISIONED_DURABLE_BACKEND');
  const wanted = durableBackendOf(env.DURABLE_BACKEND);
  if (wanted === deployed || env.DURABLE_BACKEND_MIGRATE === 'true') return undefined;
  return (
    `DURABLE_BACKEND is ${wanted}, but the deployed app keeps its orchestrations in ${deployed} (PROVISIONED_DURABLE_BACKEND). ` +
    `Switching strands every run still going there (docs/deploy.md, "Switching the durable backend"). ` +
    `To keep ${deployed}: azd env set DURABLE_BACKEND ${deployed}. To switch: wait until no run is going, then ` +
    `azd env set DURABLE_BACKEND_MIGRATE true and run azd up.`
  );
}

/**
 * The predeploy hook: the staged package must be for the backend the app was provisioned with — whatever the
 * environment says now, since `azd deploy` alone provisions nothing.
 */
export function deployRefusal(
  env: Record<string, string | undefined>,
  staged: DurableBackend,
): string | undefined {
  if (!env.PROVISIONED_DURABLE_BACKEND)
    return (
      `cannot tell which durable backend the deployed app runs: PROVISIONED_DURABLE_BACKEND is not in the azd environment. ` +
      `Run azd provision (or azd env refresh, where it was provisioned elsewhere), then deploy again.`
    );
  const deployed = durableBackendOf(env.PROVISIONED_DURABLE_BACKEND, 'PROVISIONED_DURABLE_BACKEND');
  if (staged === deployed) return undefined;
  return (
    `the package is staged for ${staged} (.deploy/host.json), but the app is provisioned for ${deployed} (PROVISIONED_DURABLE_BACKEND): ` +
    `deployed, ${staged === 'scheduler' ? 'its host would not start (no scheduler connection string)' : 'it would run on Azure Storage beside the scheduler its orchestrations are in'}. ` +
    `Run azd up (provision, then deploy), or azd env set DURABLE_BACKEND ${deployed} to package for the deployed one.`
  );
}
