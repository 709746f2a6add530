import type { TokenCredential } from '@azure/identity';
import type { BlobServiceClient } from '@azure/storage-blob';
import { isLoopback, type AppConfig } from '../config';
import { ConfigError } from '../errors';
import { azureCredential } from '../secrets/credential';

/**
 * The SDK, loaded with the first client: a command or function that never touches storage (`sync --sink dir:…`
 * with local state, help) does not pay for it (docs/benchmarks.md, "Cold start").
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const sdk = () => require('@azure/storage-blob') as typeof import('@azure/storage-blob');

/**
 * Blob Storage as the app sees it: Azurite's connection string locally, the service URI with the managed
 * identity in Azure (no account keys there).
 */
export function blobService(
  config: Pick<AppConfig, 'storageConnection' | 'storageServiceUris' | 'azureClientId'>,
  credential?: TokenCredential,
): BlobServiceClient {
  // One client per configuration, whoever asks (the sync's state, the catalog, exports, imports, the sinks).
  if (!credential) {
    let client = services.get(config);
    if (!client) services.set(config, (client = newBlobService(config)));
    return client;
  }
  return newBlobService(config, credential);
}

const services = new WeakMap<object, BlobServiceClient>();

function newBlobService(
  config: Pick<AppConfig, 'storageConnection' | 'storageServiceUris' | 'azureClientId'>,
  credential?: TokenCredential,
): BlobServiceClient {
  if (config.storageConnection) return sdk().BlobServiceClient.fromConnectionString(config.storageConnection);
  const url = config.storageServiceUris?.blob;
  if (url) return new (sdk().BlobServiceClient)(url, credential ?? azureCredential(config));
  throw new ConfigError([
    'AzureWebJobsStorage: not set (nor AzureWebJobsStorage__blobServiceUri); blob storage is needed for sync state and exports',
  ]);
}

const EMULATOR_ACCOUNT = 'devstoreaccount1';

/**
 * A token for Azurite's OAuth basic mode, which checks issuer, audience and lifetime but no signature.
 * Only ever sent to the emulator's development account on this machine (see `delegationService`).
 */
export function emulatorCredential(): TokenCredential {
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const tid = '00000000-0000-0000-0000-000000000000';
  return {
    getToken: async () => {
      // Azurite checks lifetimes against the real time, so this reads the system clock.
      const now = Math.floor(Date.now() / 1000);
      const claims = {
        aud: 'https://storage.azure.com',
        iss: `https://sts.windows.net/${tid}/`,
        iat: now,
        nbf: now - 300,
        exp: now + 3600,
        oid: '11111111-1111-4111-8111-111111111111',
        tid,
      };
      return {
        token: `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`,
        expiresOnTimestamp: (now + 3600) * 1000,
      };
    },
  };
}

/**
 * Blob Storage with an identity, for what only an identity may do (user-delegation keys, which sign export
 * links): the managed identity in Azure — also when AzureWebJobsStorage is a connection string to a real
 * account — and, for Azurite's development account on loopback, the emulator's development token (Azurite
 * must then run over HTTPS with `--oauth basic`, as `dev` starts it).
 */
export function delegationService(
  config: Pick<AppConfig, 'storageConnection' | 'storageServiceUris' | 'azureClientId'>,
): BlobServiceClient {
  if (config.storageConnection) {
    const { BlobServiceClient } = sdk();
    // The connection string's own endpoint and account, read by the SDK; only the credential differs.
    const keyed = BlobServiceClient.fromConnectionString(config.storageConnection);
    const emulator = keyed.accountName === EMULATOR_ACCOUNT && isLoopback(new URL(keyed.url));
    return new BlobServiceClient(keyed.url, emulator ? emulatorCredential() : azureCredential(config));
  }
  return blobService(config);
}
