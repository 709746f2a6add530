import { UpstreamError } from '../errors';
import { pathGetter } from '../streams/paths';

export { incrementalVariables } from '../streams/incremental';

/**
 * An incremental pass that reads newest first (`kind: order`): it stops after the page where the records reach the
 * last pass's mark (`since`: the mark less the overlap, so records stamped in the same instant are read again, never
 * lost), and it checks the order as it reads — a record newer than the one before it means the server does not
 * order as asked, and the pass then reads to the end (nothing missed) and the next pass is a full one.
 */
export class NewestFirst {
  private readonly at: (record: unknown) => unknown;
  private readonly sinceMs: number;
  private lastMs = Infinity;
  /** The order was not kept: read on to the end. */
  broken = false;

  constructor(
    private readonly stream: string,
    field: string,
    since: string,
  ) {
    this.at = pathGetter(field);
    this.sinceMs = Date.parse(since);
  }

  /** Reads one page; true when the listing may stop after it (its oldest record is older than the mark). */
  page(records: unknown[]): boolean {
    let reached = false;
    for (const record of records) {
      const ms = Date.parse(String(this.at(record)));
      if (Number.isNaN(ms))
        throw new UpstreamError(
          'upstream_malformed',
          this.stream,
          `${this.stream}: a record's change time is not a date-time, so it cannot be read newest first`,
        );
      if (ms > this.lastMs) this.broken = true;
      this.lastMs = ms;
      if (ms < this.sinceMs) reached = true;
    }
    return reached && !this.broken;
  }
}
