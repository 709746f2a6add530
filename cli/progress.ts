import type { StreamCounts } from '../shared/changes';

const WIDTH = 24;

/** One line per stream, redrawn in place on a TTY: a bar against the last pass's count when there is one. */
export class StreamProgress {
  private readonly lines = new Map<string, string>();
  private drawn = 0;
  private last = 0;

  constructor(
    private readonly out: NodeJS.WriteStream,
    streams: string[],
  ) {
    for (const s of streams) this.lines.set(s, `${s.padEnd(10)} waiting`);
  }

  update(stream: string, c: StreamCounts, expected: number, final?: string): void {
    const ratio = expected ? Math.min(1, c.read / expected) : undefined;
    const bar =
      ratio === undefined
        ? ''
        : `[${'█'.repeat(Math.round(ratio * WIDTH)).padEnd(WIDTH, '░')}] ${String(Math.floor(ratio * 100)).padStart(3)}% `;
    this.lines.set(
      stream,
      `${stream.padEnd(10)} ${bar}${c.read} read · ${c.created} created · ${c.updated} updated · ${c.deleted} deleted${final ? ` ${final}` : ''}`,
    );
    const now = Date.now();
    if (final || now - this.last > 100) this.draw(now);
  }

  draw(now = Date.now()): void {
    this.last = now;
    const up = this.drawn ? `\x1b[${this.drawn}F` : '';
    this.out.write(`${up}${[...this.lines.values()].map((l) => `\x1b[2K${l}\n`).join('')}`);
    this.drawn = this.lines.size;
  }
}
