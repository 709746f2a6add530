/** Where the app runs: Azure (and not Development) or elsewhere, and which setting said so. */
/** The platform settings that say the app runs in Azure, in the order they are named (the first one found). */
const HOSTED_SIGNS = ['HOSTED_IN_AZURE', 'WEBSITE_SKU', 'CONTAINER_NAME', 'WEBSITE_INSTANCE_ID'] as const;
type HostedSettings = Partial<
  Record<(typeof HOSTED_SIGNS)[number] | 'WEBSITE_SITE_NAME' | 'AZURE_FUNCTIONS_ENVIRONMENT', string>
>;

/**
 * Where the app runs, and what said so: `HOSTED_IN_AZURE` when set (the infra sets it), else any of the platform's
 * own settings — `WEBSITE_SKU` (Flex Consumption sets `FlexConsumption`), `CONTAINER_NAME` beside
 * `WEBSITE_SITE_NAME` (Linux Consumption and Flex), `WEBSITE_INSTANCE_ID` (App Service) — the settings the Functions
 * host tells its own hosting apart by.
 */
export function hostingOf(s: HostedSettings): { azure: boolean; because: string } {
  if (s.HOSTED_IN_AZURE)
    return { azure: s.HOSTED_IN_AZURE === 'true', because: `HOSTED_IN_AZURE=${s.HOSTED_IN_AZURE}` };
  // CONTAINER_NAME alone is no sign: CI runners and development containers set it too (this project's own do).
  const sign = HOSTED_SIGNS.slice(1).find((k) => s[k] && (k !== 'CONTAINER_NAME' || s.WEBSITE_SITE_NAME));
  return sign
    ? {
        azure: true,
        because:
          sign === 'WEBSITE_SKU'
            ? `WEBSITE_SKU=${s.WEBSITE_SKU}`
            : sign === 'CONTAINER_NAME'
              ? 'CONTAINER_NAME and WEBSITE_SITE_NAME are set'
              : `${sign} is set`,
      }
    : {
        azure: false,
        because: 'none of WEBSITE_SKU, WEBSITE_INSTANCE_ID, CONTAINER_NAME with WEBSITE_SITE_NAME is set',
      };
}

/** In Azure and not in Development: the app's folder is the read-only package mount. */
export function isHosted(s: HostedSettings): boolean {
  return hostingOf(s).azure && s.AZURE_FUNCTIONS_ENVIRONMENT?.toLowerCase() !== 'development';
}

/** Where traces and logs go (shared/telemetry/setup.ts); neither set means no telemetry SDK is loaded. */
