export interface SandboxStats {
  token: { client_credentials: number; device_code: number; refresh_token: number };
  deviceAuthorization: number;
  graphql: {
    queries: number;
    mutations: number;
    refused: number;
    /** Operations run, by operation name (`anonymous` without one): a run's pages apart from its schema reads. */
    byOperation: Record<string, number>;
    /** Mutations run by each person (username), as the service's audit log would count them. */
    mutationsByPerson: Record<string, number>;
    /** Requests refused by `--limits`: over the rate (429) or over the complexity ceiling. */
    rateLimited: number;
    tooComplex: number;
  };
  /** Requests answered by an injected fault instead of the endpoint (not counted above). */
  faults: number;
}

export const emptyStats = (): SandboxStats => ({
  token: { client_credentials: 0, device_code: 0, refresh_token: 0 },
  deviceAuthorization: 0,
  graphql: {
    queries: 0,
    mutations: 0,
    refused: 0,
    byOperation: {},
    mutationsByPerson: {},
    rateLimited: 0,
    tooComplex: 0,
  },
  faults: 0,
});
