import { backoffMs, retryAfterMs, retryDelayMs } from '../../shared/net/retry';

describe('retry policy', () => {
  const policy = { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 1000 };
  it('backs off exponentially with jitter between half and the whole ceiling, capped', () => {
    expect(backoffMs(1, policy, () => 0)).toBe(50);
    expect(backoffMs(1, policy, () => 1)).toBe(100);
    expect(backoffMs(3, policy, () => 0.5)).toBe(300);
    expect(backoffMs(10, policy, () => 1)).toBe(1000);
  });
  it('reads Retry-After as seconds or a date, capped, ignoring junk', () => {
    expect(retryAfterMs('2', 0, 10_000)).toBe(2000);
    expect(retryAfterMs('3600', 0, 10_000)).toBe(10_000);
    expect(retryAfterMs(new Date(5000).toUTCString(), 0, 10_000)).toBe(5000);
    expect(retryAfterMs('soon', 0, 10_000)).toBeUndefined();
    expect(retryAfterMs(null, 0, 10_000)).toBeUndefined();
  });
  it("waits what the server's Retry-After says (capped), and backs off when it says nothing readable", () => {
    expect(retryDelayMs(1, policy, '0.5', 0, () => 1)).toBe(500);
    expect(retryDelayMs(1, policy, '60', 0, () => 1)).toBe(1000);
    expect(retryDelayMs(3, policy, 'soon', 0, () => 0.5)).toBe(300);
    expect(retryDelayMs(1, policy, null, 0, () => 0)).toBe(50);
  });
});
