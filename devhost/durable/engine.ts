import { randomUUID } from 'node:crypto';
import { InvocationContext } from '@azure/functions';
import type { OffsetClock } from '../../shared/clock';
import type { Logger } from '../../shared/log';
import { type Registration, triggerOf } from '../functions-core';
import {
  Action,
  DurableHttpError,
  event,
  EventType,
  FAILURE_MARKER,
  flatten,
  orchestrationTrigger,
  TERMINAL,
  activityInput,
  type OrchestratorAction,
  type OrchestratorState,
} from './protocol';
import type { DurableStore, HistoryEvent, InstanceRecord } from './store';

/** An instance the engine is working on: its record, its history, the work queued on it, its timers. */
interface Live {
  record: InstanceRecord;
  history: HistoryEvent[];
  chain: Promise<void>;
  timers: Map<number, number>;
}

/**
 * Runs durable orchestrations with the library's own orchestrator code: each episode hands the registered
 * handler the whole history plus the new events, and carries out the new actions it returns — activities,
 * durable timers on the host clock, external events, custom status, continueAsNew, terminate.
 */
export class DurableEngine {
  private readonly live = new Map<string, Live>();
  private ticker?: NodeJS.Timeout;

  constructor(
    private readonly store: DurableStore,
    private readonly registrations: Map<string, Registration>,
    private readonly clock: OffsetClock,
    private readonly logger: Logger,
    private readonly options: { queueLatencyMs?: number } = {},
  ) {}

  private now = () => new Date(this.clock.now()).toISOString();

  private kindOf(name: string): string | undefined {
    const reg = this.registrations.get(name);
    return reg && triggerOf(reg.metadata).type;
  }

  /** Loads every unfinished instance from storage and carries on where it stopped. */
  async resume(): Promise<number> {
    await this.store.init();
    const offset = await this.store.loadClockOffset();
    this.clock.setOffset(offset);
    let resumed = 0;
    for (const record of await this.store.list()) {
      if (TERMINAL.includes(record.runtimeStatus)) continue;
      const live: Live = {
        record,
        history: await this.store.readHistory(record.instanceId),
        chain: Promise.resolve(),
        timers: new Map(),
      };
      this.live.set(record.instanceId, live);
      const all = [...live.history, ...record.inbox];
      const done = new Set(
        all
          .filter((e) => e.EventType === EventType.TaskCompleted || e.EventType === EventType.TaskFailed)
          .map((e) => e.TaskScheduledId),
      );
      const fired = new Set(all.filter((e) => e.EventType === EventType.TimerFired).map((e) => e.TimerId));
      for (const e of live.history) {
        // At least once, like the real host: an activity that was running when the host stopped runs again.
        if (e.EventType === EventType.TaskScheduled && !done.has(e.EventId)) {
          this.runActivity(
            live,
            e.EventId,
            String(e.Name),
            e.Input ? JSON.parse(String(e.Input)) : undefined,
          );
        }
        if (e.EventType === EventType.TimerCreated && !fired.has(e.EventId))
          live.timers.set(e.EventId, Date.parse(String(e.FireAt)));
      }
      if (record.inbox.length) this.enqueue(live, () => this.episode(live));
      resumed++;
    }
    this.ticker = setInterval(() => this.tick(), 50);
    this.ticker.unref();
    return resumed;
  }

  async stop(): Promise<void> {
    if (this.ticker) clearInterval(this.ticker);
    await Promise.all([...this.live.values()].map((l) => l.chain));
  }

  private enqueue(live: Live, work: () => Promise<void>): Promise<void> {
    live.chain = live.chain.then(work).catch((err: Error) => {
      this.logger.log('error', 'durable engine step failed', {
        instanceId: live.record.instanceId,
        reason: err.message,
      });
    });
    return live.chain;
  }

  async start(name: string, instanceId: string | undefined, inputJson: string): Promise<string> {
    if (this.kindOf(name) !== 'orchestrationTrigger')
      throw new DurableHttpError(404, `no orchestrator function named "${name}"`);
    const id = instanceId ?? randomUUID().replace(/-/g, '');
    const existing = this.live.get(id)?.record ?? (await this.store.get(id));
    if (existing && !TERMINAL.includes(existing.runtimeStatus)) {
      throw new DurableHttpError(
        409,
        `an orchestration instance with id "${id}" is already ${existing.runtimeStatus}`,
      );
    }
    if (existing) await this.store.deleteHistory(id);
    const now = this.now();
    const record: InstanceRecord = {
      instanceId: id,
      name,
      runtimeStatus: 'Pending',
      input: inputJson,
      createdTime: now,
      lastUpdatedTime: now,
      inbox: [event(EventType.ExecutionStarted, -1, now, { Name: name, Input: inputJson || undefined })],
      historyCount: 0,
      scheduledActions: 0,
      nextSequence: 0,
    };
    const live: Live = { record, history: [], chain: Promise.resolve(), timers: new Map() };
    this.live.set(id, live);
    await this.store.save(record);
    void this.enqueue(live, () => this.episode(live));
    return id;
  }

  private async liveOrThrow(id: string): Promise<Live> {
    const live = this.live.get(id);
    if (live) return live;
    const record = await this.store.get(id);
    if (!record) throw new DurableHttpError(404, `no instance "${id}"`);
    throw new DurableHttpError(410, `instance "${id}" is ${record.runtimeStatus}`);
  }

  async raiseEvent(id: string, name: string, inputJson: string): Promise<void> {
    const live = await this.liveOrThrow(id);
    if (TERMINAL.includes(live.record.runtimeStatus))
      throw new DurableHttpError(410, `instance "${id}" is ${live.record.runtimeStatus}`);
    await this.deliver(
      live,
      event(EventType.EventRaised, -1, this.now(), { Name: name, Input: inputJson || undefined }),
    );
  }

  async terminate(id: string, reason: string): Promise<void> {
    const live = await this.liveOrThrow(id);
    await this.enqueue(live, async () => {
      const r = live.record;
      if (TERMINAL.includes(r.runtimeStatus)) return;
      r.runtimeStatus = 'Terminated';
      r.output = reason;
      r.lastUpdatedTime = this.now();
      live.timers.clear();
      await this.store.appendHistory(r.instanceId, live.history.length, [
        event(EventType.ExecutionTerminated, -1, r.lastUpdatedTime, { Input: JSON.stringify(reason) }),
      ]);
      await this.store.save(r);
      this.live.delete(r.instanceId);
    });
  }

  async status(id: string, showHistory = false) {
    const record = this.live.get(id)?.record ?? (await this.store.get(id));
    if (!record) return undefined;
    return {
      name: record.name,
      instanceId: record.instanceId,
      runtimeStatus: record.runtimeStatus,
      input: record.input ? JSON.parse(record.input) : null,
      customStatus: record.customStatus ?? null,
      output: record.output ?? null,
      createdTime: record.createdTime,
      lastUpdatedTime: record.lastUpdatedTime,
      ...(showHistory ? { historyEvents: await this.store.readHistory(id) } : {}),
    };
  }

  async list() {
    return Promise.all((await this.store.list()).map((r) => this.status(r.instanceId)));
  }

  async purge(id: string): Promise<boolean> {
    const live = this.live.get(id);
    if (live && !TERMINAL.includes(live.record.runtimeStatus))
      throw new DurableHttpError(409, `instance "${id}" is still ${live.record.runtimeStatus}`);
    this.live.delete(id);
    return this.store.delete(id);
  }

  /** Persists the host clock's offset after a move. */
  async clockMoved(offsetMs: number): Promise<void> {
    await this.store.saveClockOffset(offsetMs);
    this.tick();
  }

  /** Fires every durable timer that is due on the host clock. */
  tick(): void {
    const now = this.clock.now();
    for (const live of this.live.values()) {
      for (const [id, fireAt] of live.timers) {
        if (fireAt <= now) {
          live.timers.delete(id);
          void this.deliver(
            live,
            event(EventType.TimerFired, -1, this.now(), {
              TimerId: id,
              FireAt: new Date(fireAt).toISOString(),
            }),
          );
        }
      }
    }
  }

  private deliver(live: Live, e: HistoryEvent): Promise<void> {
    return this.enqueue(live, async () => {
      if (TERMINAL.includes(live.record.runtimeStatus)) return;
      live.record.inbox.push(e);
      await this.store.save(live.record);
      await this.episode(live);
    });
  }

  private runActivity(live: Live, taskId: number, name: string, input: unknown): void {
    const run = async (): Promise<HistoryEvent> => {
      const reg = this.registrations.get(name);
      const stamp = () => this.now();
      if (!reg || this.kindOf(name) !== 'activityTrigger') {
        return event(EventType.TaskFailed, -1, stamp(), {
          TaskScheduledId: taskId,
          Reason: `no activity function named "${name}"`,
          Details: '',
        });
      }
      try {
        const context = new InvocationContext({
          invocationId: randomUUID(),
          functionName: name,
          logHandler: (level, ...args) =>
            this.logger.log(
              level === 'error' ? 'error' : 'debug',
              `activity ${name}: ${args.map(String).join(' ')}`,
            ),
          options: { trigger: { type: 'activityTrigger', name: triggerOf(reg.metadata).name } },
        });
        const result = await reg.handler(input, context);
        return event(EventType.TaskCompleted, -1, stamp(), {
          TaskScheduledId: taskId,
          Result: JSON.stringify(result ?? null),
        });
      } catch (err) {
        return event(EventType.TaskFailed, -1, stamp(), {
          TaskScheduledId: taskId,
          Reason: (err as Error).message,
          Details: (err as { code?: string }).code ?? '',
        });
      }
    };
    const latency = this.options.queueLatencyMs ?? 0;
    void run().then(async (e) => {
      // The control queue's poll, as a host in Azure meets it (HostOptions.queueLatencyMs).
      if (latency > 0) await new Promise((r) => setTimeout(r, latency));
      await this.deliver(live, e);
    });
  }

  /** One orchestrator episode: replay the history with the new events, carry out the new actions. */
  private async episode(live: Live): Promise<void> {
    const r = live.record;
    if (TERMINAL.includes(r.runtimeStatus) || r.inbox.length === 0) return;
    const reg = this.registrations.get(r.name);
    if (!reg) throw new Error(`orchestrator ${r.name} is not registered`);
    const now = this.now();
    const fresh = [event(EventType.OrchestratorStarted, -1, now), ...r.inbox];
    r.inbox = [];
    const history = [...live.history.map((e) => ({ ...e, IsPlayed: true })), ...fresh];
    const trigger = orchestrationTrigger(
      history,
      r.input ? JSON.parse(r.input) : undefined,
      r.instanceId,
      live.history.length > 0,
    );
    const context = new InvocationContext({
      invocationId: randomUUID(),
      functionName: r.name,
      logHandler: () => undefined,
    });
    let state: OrchestratorState | undefined;
    let failure: string | undefined;
    try {
      state = (await reg.handler(trigger, context)) as OrchestratorState;
    } catch (err) {
      const message = (err as Error).message ?? String(err);
      const i = message.indexOf(FAILURE_MARKER);
      failure = i >= 0 ? message.slice(0, i) : message;
      try {
        state =
          i >= 0 ? (JSON.parse(message.slice(i + FAILURE_MARKER.length)) as OrchestratorState) : undefined;
      } catch {
        state = undefined;
      }
      // The library puts the real message in the state; its own prefix is not always meaningful.
      if (state?.error) failure = state.error;
    }
    const leaves = flatten(state?.actions?.flat() ?? []);
    const scheduled: HistoryEvent[] = [];
    const activities: Array<{ id: number; name: string; input: unknown }> = [];
    let continueAsNew: OrchestratorAction | undefined;
    if (failure === undefined) {
      for (const a of leaves.slice(r.scheduledActions)) {
        if (a.actionType === Action.CallActivity || a.actionType === Action.CallActivityWithRetry) {
          const id = r.nextSequence++;
          const input = activityInput(a.input);
          scheduled.push(
            event(EventType.TaskScheduled, id, now, {
              Name: a.functionName,
              Input: JSON.stringify(input ?? null),
            }),
          );
          activities.push({ id, name: String(a.functionName), input });
        } else if (a.actionType === Action.CreateTimer) {
          const id = r.nextSequence++;
          const fireAt = new Date(a.fireAt as string).toISOString();
          scheduled.push(event(EventType.TimerCreated, id, now, { FireAt: fireAt }));
          live.timers.set(id, Date.parse(fireAt));
        } else if (a.actionType === Action.ContinueAsNew) {
          continueAsNew = a;
        } else if (a.actionType !== Action.WaitForExternalEvent) {
          failure = `action type ${a.actionType} is not supported by the local host (activities, timers, external events and continueAsNew are)`;
          break;
        }
      }
      r.scheduledActions = leaves.length;
    }
    await this.store.appendHistory(r.instanceId, live.history.length, [
      ...fresh,
      ...scheduled,
      event(EventType.OrchestratorCompleted, -1, now),
    ]);
    live.history.push(...fresh, ...scheduled, event(EventType.OrchestratorCompleted, -1, now));
    r.customStatus = state?.customStatus ?? r.customStatus;
    r.lastUpdatedTime = now;
    if (failure !== undefined) {
      r.runtimeStatus = 'Failed';
      r.output = failure;
      live.timers.clear();
      this.logger.log('warn', 'orchestration failed', { instanceId: r.instanceId, reason: failure });
    } else if (continueAsNew) {
      await this.store.deleteHistory(r.instanceId);
      live.history = [];
      live.timers.clear();
      r.input = JSON.stringify(continueAsNew.input ?? null);
      r.scheduledActions = 0;
      r.nextSequence = 0;
      r.runtimeStatus = 'Running';
      r.inbox = [event(EventType.ExecutionStarted, -1, now, { Name: r.name, Input: r.input })];
    } else if (state?.isDone) {
      r.runtimeStatus = 'Completed';
      r.output = state.output ?? null;
      live.timers.clear();
    } else {
      r.runtimeStatus = 'Running';
    }
    r.historyCount = live.history.length;
    await this.store.save(r);
    if (TERMINAL.includes(r.runtimeStatus)) this.live.delete(r.instanceId);
    // Persisted first, so a host that dies now re-runs them on resume.
    for (const a of activities) this.runActivity(live, a.id, a.name, a.input);
    if (continueAsNew) await this.episode(live);
  }
}
