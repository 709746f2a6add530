/** What one set-up check found, and the one action that fixes it when it did not pass. */
export interface CheckOutcome {
  state: 'ok' | 'warn' | 'fail';
  found: string;
  action?: string;
}

/** One check as `doctor` lists it. Never a secret or token in any field. */
export interface Check extends CheckOutcome {
  name: string;
}
