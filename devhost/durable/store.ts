import { TableClient, TableTransaction } from '@azure/data-tables';

/** A history event as the durable-functions library reads it (PascalCase, JSON strings for payloads). */
export type HistoryEvent = {
  EventType: number;
  EventId: number;
  IsPlayed: boolean;
  Timestamp: string;
} & Record<string, unknown>;

export type RuntimeStatus = 'Pending' | 'Running' | 'Completed' | 'ContinuedAsNew' | 'Failed' | 'Terminated';

export interface InstanceRecord {
  instanceId: string;
  name: string;
  runtimeStatus: RuntimeStatus;
  /** JSON text, as the client sent it ('' for none). */
  input: string;
  output?: unknown;
  customStatus?: unknown;
  createdTime: string;
  lastUpdatedTime: string;
  /** Events that arrived since the last episode (completions, fired timers, raised events). */
  inbox: HistoryEvent[];
  historyCount: number;
  /** Leaf actions of the orchestrator already scheduled, and the next sequence number for tasks. */
  scheduledActions: number;
  nextSequence: number;
}

/**
 * Instance state and history in Table storage (Azurite locally), so a restarted host resumes running
 * orchestrations as the real host does. History rows are append-only, one event per row.
 */
export class DurableStore {
  private readonly instances: TableClient;
  private readonly history: TableClient;
  private ready?: Promise<void>;

  constructor(connectionString: string, hub: string) {
    const opts = { allowInsecureConnection: true };
    this.instances = TableClient.fromConnectionString(connectionString, `${hub}Instances`, opts);
    this.history = TableClient.fromConnectionString(connectionString, `${hub}History`, opts);
  }

  init(): Promise<void> {
    this.ready ??= Promise.all([this.instances.createTable(), this.history.createTable()]).then(
      () => undefined,
    );
    return this.ready;
  }

  async save(record: InstanceRecord): Promise<void> {
    await this.instances.upsertEntity(
      {
        partitionKey: 'instance',
        rowKey: record.instanceId,
        status: record.runtimeStatus,
        json: JSON.stringify(record),
      },
      'Replace',
    );
  }

  async get(instanceId: string): Promise<InstanceRecord | undefined> {
    try {
      const e = await this.instances.getEntity<{ json: string }>('instance', instanceId);
      return JSON.parse(e.json) as InstanceRecord;
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return undefined;
      throw err;
    }
  }

  async list(): Promise<InstanceRecord[]> {
    const out: InstanceRecord[] = [];
    for await (const e of this.instances.listEntities<{ json: string }>({
      queryOptions: { filter: `PartitionKey eq 'instance'` },
    })) {
      out.push(JSON.parse(e.json) as InstanceRecord);
    }
    return out;
  }

  /** The host clock's offset, so moved time never runs backwards across a restart. */
  async saveClockOffset(offsetMs: number): Promise<void> {
    await this.instances.upsertEntity(
      { partitionKey: 'host', rowKey: 'clock', offsetMs: String(offsetMs) },
      'Replace',
    );
  }

  async loadClockOffset(): Promise<number> {
    try {
      return Number((await this.instances.getEntity<{ offsetMs: string }>('host', 'clock')).offsetMs) || 0;
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return 0;
      throw err;
    }
  }

  async appendHistory(instanceId: string, from: number, events: HistoryEvent[]): Promise<void> {
    for (let i = 0; i < events.length; i += 100) {
      const tx = new TableTransaction();
      events.slice(i, i + 100).forEach((event, j) => {
        tx.createEntity({
          partitionKey: instanceId,
          rowKey: String(from + i + j).padStart(10, '0'),
          json: JSON.stringify(event),
        });
      });
      await this.history.submitTransaction(tx.actions);
    }
  }

  async readHistory(instanceId: string): Promise<HistoryEvent[]> {
    const out: HistoryEvent[] = [];
    const filter = `PartitionKey eq '${instanceId.replace(/'/g, "''")}'`;
    for await (const e of this.history.listEntities<{ json: string }>({ queryOptions: { filter } }))
      out.push(JSON.parse(e.json));
    return out;
  }

  async deleteHistory(instanceId: string): Promise<void> {
    const filter = `PartitionKey eq '${instanceId.replace(/'/g, "''")}'`;
    for await (const e of this.history.listEntities({ queryOptions: { filter, select: ['RowKey'] } })) {
      await this.history.deleteEntity(instanceId, e.rowKey as string);
    }
  }

  async delete(instanceId: string): Promise<boolean> {
    await this.deleteHistory(instanceId);
    try {
      await this.instances.deleteEntity('instance', instanceId);
      return true;
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return false;
      throw err;
    }
  }
}
