import { InvocationContext } from '@azure/functions';
import type { HistoryEvent } from '../../devhost/durable/store';
import {
  Action,
  activityInput,
  EventType,
  FAILURE_MARKER,
  flatten as leaves,
  orchestrationTrigger,
  type OrchestratorState,
} from '../../devhost/durable/protocol';

/**
 * Drives a registered orchestrator the way the Functions host does, with durable-functions' own replay: every
 * `run()` hands the orchestrator's handler the whole history plus the events that arrived since, and reads back the
 * actions it took. The test plays the host's other part — it completes or fails activities, fires timers and
 * raises events — so an orchestrator's every path can be walked in milliseconds, with nothing on the network.
 *
 * The handler comes from the registrations the app made through `@azure/functions-core` (the test mocks it with
 * devhost/functions-core.ts), so a function registered under another name than the orchestrator calls is caught.
 */

/** Something the orchestrator is waiting for: an activity it called or a timer it set. */
export interface Scheduled {
  id: number;
  kind: 'activity' | 'timer';
  name?: string;
  input?: unknown;
  fireAt?: string;
}

export interface Episode {
  done: boolean;
  output?: unknown;
  customStatus?: unknown;
  /** The orchestration failed (an exception escaped the generator): its message. */
  failed?: string;
  /** What it scheduled in this episode, in order. */
  scheduled: Scheduled[];
  /** It continued as new with this input (a new history starts: make a new ScriptedOrchestration with it). */
  continuedAsNew?: unknown;
}

type Handler = (trigger: unknown, context: InvocationContext) => Promise<unknown>;

export class ScriptedOrchestration {
  private history: HistoryEvent[] = [];
  private inbox: HistoryEvent[];
  private seq = 0;
  private seenActions = 0;
  /** Activities and timers scheduled and not yet answered. */
  readonly pending = new Map<number, Scheduled>();
  /** Every activity call, in order, with its input as the history stores it. */
  readonly calls: Array<{ name: string; input: unknown }> = [];
  now: number;

  constructor(
    private readonly registrations: Map<string, { handler: unknown }>,
    readonly name: string,
    private readonly input: unknown = {},
    options: { startAt?: number; instanceId?: string } = {},
  ) {
    this.now = options.startAt ?? Date.parse('2026-11-23T12:00:00Z');
    this.instanceId = options.instanceId ?? `${name}-test`;
    this.inbox = [this.event(EventType.ExecutionStarted, { Name: name, Input: JSON.stringify(input) })];
  }

  readonly instanceId: string;

  private event(type: number, extra: Record<string, unknown> = {}, id = -1): HistoryEvent {
    return {
      EventType: type,
      EventId: id,
      IsPlayed: false,
      Timestamp: new Date(this.now).toISOString(),
      ...extra,
    };
  }

  /** One episode: replay with the new events, record the new actions. */
  async run(): Promise<Episode> {
    const registration = this.registrations.get(this.name);
    if (!registration) throw new Error(`no orchestration registered as "${this.name}"`);
    const fresh = [this.event(EventType.OrchestratorStarted), ...this.inbox];
    this.inbox = [];
    const history = [...this.history.map((e) => ({ ...e, IsPlayed: true })), ...fresh];
    const trigger = orchestrationTrigger(history, this.input, this.instanceId, this.history.length > 0);
    const context = new InvocationContext({
      invocationId: `episode-${this.history.length}`,
      functionName: this.name,
    });
    let state: OrchestratorState | undefined;
    let failed: string | undefined;
    try {
      state = (await (registration.handler as Handler)(trigger, context)) as OrchestratorState;
    } catch (err) {
      const message = (err as Error).message;
      const marker = message.indexOf(FAILURE_MARKER);
      try {
        state =
          marker >= 0
            ? (JSON.parse(message.slice(marker + FAILURE_MARKER.length)) as OrchestratorState)
            : undefined;
      } catch {
        state = undefined;
      }
      failed = state?.error ?? message;
    }
    const all = leaves(state?.actions?.flat() ?? []);
    const scheduled: Scheduled[] = [];
    const events: HistoryEvent[] = [];
    let continuedAsNew: unknown;
    for (const a of all.slice(this.seenActions)) {
      if (a.actionType === Action.CallActivity || a.actionType === Action.CallActivityWithRetry) {
        const id = this.seq++;
        const input = activityInput(a.input);
        events.push(
          this.event(
            EventType.TaskScheduled,
            { Name: a.functionName, Input: JSON.stringify(input ?? null) },
            id,
          ),
        );
        scheduled.push({ id, kind: 'activity', name: String(a.functionName), input });
        this.calls.push({ name: String(a.functionName), input });
      } else if (a.actionType === Action.CreateTimer) {
        const id = this.seq++;
        const fireAt = new Date(a.fireAt as string).toISOString();
        events.push(this.event(EventType.TimerCreated, { FireAt: fireAt }, id));
        scheduled.push({ id, kind: 'timer', fireAt });
      } else if (a.actionType === Action.ContinueAsNew) continuedAsNew = activityInput(a.input);
      else if (a.actionType !== Action.WaitForExternalEvent)
        throw new Error(`action type ${a.actionType} is not scripted by this helper`);
    }
    this.seenActions = all.length;
    for (const s of scheduled) this.pending.set(s.id, s);
    this.history.push(...fresh, ...events, this.event(EventType.OrchestratorCompleted));
    return {
      done: Boolean(state?.isDone),
      output: state?.output,
      customStatus: state?.customStatus,
      failed,
      scheduled,
      ...(continuedAsNew !== undefined ? { continuedAsNew } : {}),
    };
  }

  /** The one pending activity of that name (the oldest when several are). */
  activity(name: string): Scheduled {
    const found = [...this.pending.values()].find((s) => s.kind === 'activity' && s.name === name);
    if (!found) throw new Error(`no pending activity ${name}; pending: ${this.describePending()}`);
    return found;
  }

  private take(idOrName: number | string): Scheduled {
    const s = typeof idOrName === 'number' ? this.pending.get(idOrName) : this.activity(idOrName);
    if (!s) throw new Error(`nothing pending with id ${idOrName}; pending: ${this.describePending()}`);
    this.pending.delete(s.id);
    return s;
  }

  private describePending(): string {
    return (
      [...this.pending.values()].map((s) => (s.kind === 'timer' ? `timer@${s.fireAt}` : s.name)).join(', ') ||
      'nothing'
    );
  }

  /** The activity (by id, or the oldest pending of that name) completed with `result`. */
  complete(idOrName: number | string, result: unknown = null): this {
    const s = this.take(idOrName);
    this.inbox.push(
      this.event(EventType.TaskCompleted, { TaskScheduledId: s.id, Result: JSON.stringify(result) }),
    );
    return this;
  }

  /** The activity threw. */
  fail(idOrName: number | string, reason: string): this {
    const s = this.take(idOrName);
    this.inbox.push(this.event(EventType.TaskFailed, { TaskScheduledId: s.id, Reason: reason, Details: '' }));
    return this;
  }

  /** The oldest pending timer fires (the clock moves to its time). */
  fireTimer(): Scheduled {
    const timer = [...this.pending.values()].find((s) => s.kind === 'timer');
    if (!timer) throw new Error(`no pending timer; pending: ${this.describePending()}`);
    this.pending.delete(timer.id);
    this.now = Math.max(this.now, Date.parse(String(timer.fireAt)));
    this.inbox.push(this.event(EventType.TimerFired, { TimerId: timer.id, FireAt: timer.fireAt }));
    return timer;
  }

  /** An external event arrives. */
  raise(name: string, input: unknown = {}): this {
    this.inbox.push(this.event(EventType.EventRaised, { Name: name, Input: JSON.stringify(input) }));
    return this;
  }

  advance(ms: number): this {
    this.now += ms;
    return this;
  }
}
