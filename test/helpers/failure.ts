/** The error a promise rejects with, typed loosely for assertions; fails the test if it resolves. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Failure = Error & Record<string, any>;

export async function failure(promise: Promise<unknown>): Promise<Failure> {
  try {
    await promise;
  } catch (err) {
    return err as Failure;
  }
  throw new Error('expected the call to fail, but it succeeded');
}
