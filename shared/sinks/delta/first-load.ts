/*
 * A current-records table's first load, written as the changes come: the staged pages are read once for both tables.
 */
import type { Change } from '../../changes';
import { ColumnLearner } from '../../formats/parquet';
import type { AddAction } from './actions';
import { KEY_COLUMN, rowOf, type Columns } from './columns';
import { columnsFor, RollingFiles, ROWS_PER_FILE, type CurrentContext } from './rolling';

/** A 52-bit fingerprint of a key: two in a first load with the same one send it the careful way (mergeCurrent). */
function fingerprint(key: string): number {
  let a = 0x811c9dc5;
  let b = 5381;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = (Math.imul(b, 33) + c) | 0;
  }
  return (a >>> 0) * 2 ** 20 + ((b >>> 0) & 0xfffff);
}

/**
 * A first load, written as the changes come (one reading of the staged pages for both tables). The columns' types are
 * fixed from the first file's rows; should a later value not fit them (or a field all null until then bring numbers),
 * or a key come twice, `conflict` says the rows must be written the careful way (`mergeCurrent`), which reads the
 * pages again with every value known — the table is then the same as if its types had been known from the start.
 */
export class FirstLoad {
  readonly learner: ColumnLearner;
  conflict?: string;
  private columns?: Columns;
  private undecided = new Set<string>();
  private buffered: Change[] = [];
  private files?: RollingFiles;
  private readonly seen = new Set<number>();

  constructor(private readonly ctx: CurrentContext) {
    this.learner = new ColumnLearner([KEY_COLUMN], ctx.fields);
  }

  async add(c: Change): Promise<void> {
    if (this.conflict) return;
    const fp = fingerprint(c.id);
    if (this.seen.has(fp)) return this.stop('a key came twice (or two keys share a fingerprint)');
    this.seen.add(fp);
    if (c.kind === 'deleted') return; // nothing to delete in an empty table
    this.learner.add(c.record);
    if (!this.columns) {
      this.buffered.push(c);
      if (this.buffered.length >= (this.ctx.options.rowsPerFile ?? ROWS_PER_FILE)) await this.decide();
      return;
    }
    await this.write(c);
  }

  private async decide(): Promise<void> {
    const kinds = this.learner.kinds();
    this.columns = columnsFor(kinds, this.ctx.fields);
    this.undecided = new Set(this.columns.filter(([name]) => kinds.get(name) === undefined).map(([n]) => n));
    this.files = new RollingFiles(this.ctx, this.columns, 'first-load');
    const buffered = this.buffered;
    this.buffered = [];
    for (const c of buffered) await this.write(c);
  }

  private async write(c: Change): Promise<void> {
    if (this.conflict) return;
    const columns = this.columns as Columns;
    if (!this.ctx.fields && this.learner.kinds().size !== columns.length)
      return this.stop('a field appeared after the columns were fixed');
    const made = rowOf(c.id, c.record, columns);
    if ('misfit' in made) return this.stop(made.misfit);
    if (this.undecided.size) {
      const r = (c.record ?? {}) as Record<string, unknown>;
      for (const name of this.undecided) {
        const v = r[name];
        if (typeof v === 'number' || typeof v === 'boolean')
          return this.stop(`field ${name}, null in the first rows, holds ${typeof v}s`);
        if (v !== null && v !== undefined) this.undecided.delete(name); // a string or an object: a string column
      }
    }
    await (this.files as RollingFiles).add(made.row);
  }

  private async stop(why: string): Promise<void> {
    this.conflict = why;
    this.buffered = [];
    await this.files?.abandon();
  }

  /** The table's columns and its first files (uploaded), or undefined after a conflict. */
  async finish(): Promise<{ columns: Columns; adds: AddAction[] } | undefined> {
    if (this.conflict) return undefined;
    if (!this.columns) await this.decide();
    if (this.conflict) return undefined;
    return { columns: this.columns as Columns, adds: await (this.files as RollingFiles).finish() };
  }

  async abandon(): Promise<void> {
    await this.files?.abandon();
  }
}
