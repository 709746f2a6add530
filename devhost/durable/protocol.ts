/*
 * What the local host's durable engine (./engine.ts) and durable-functions' orchestrator code say to each other: the
 * history event and action types the library reads and writes, the trigger an episode hands the orchestrator, and how
 * a refusal of the durable task API is answered.
 */
import type { ErrorCode } from '../../shared/errors';
import type { HistoryEvent, RuntimeStatus } from './store';

/** The history event types the library reads (its HistoryEventType enum). */
export const EventType = {
  ExecutionStarted: 0,
  ExecutionTerminated: 3,
  TaskScheduled: 4,
  TaskCompleted: 5,
  TaskFailed: 6,
  TimerCreated: 10,
  TimerFired: 11,
  OrchestratorStarted: 12,
  OrchestratorCompleted: 13,
  EventRaised: 15,
} as const;

/** The library's ActionType values that the local host carries out. */
export const Action = {
  CallActivity: 0,
  CallActivityWithRetry: 1,
  ContinueAsNew: 4,
  CreateTimer: 5,
  WaitForExternalEvent: 6,
  WhenAny: 11,
  WhenAll: 12,
};

export interface OrchestratorAction {
  actionType: number;
  functionName?: string;
  input?: unknown;
  fireAt?: string | Date;
  compoundActions?: OrchestratorAction[];
}

export interface OrchestratorState {
  isDone: boolean;
  actions: OrchestratorAction[][];
  output?: unknown;
  customStatus?: unknown;
  error?: string;
}

/** A refusal of the durable task API, answered as a problem document under the code its status means. */
export class DurableHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }

  get code(): ErrorCode {
    return DURABLE_CODES[this.status] ?? 'unexpected';
  }
}

const DURABLE_CODES: Record<number, ErrorCode> = {
  400: 'invalid_request',
  404: 'not_found',
  409: 'instance_running',
  410: 'instance_ended',
  413: 'payload_too_large',
};

export const TERMINAL: RuntimeStatus[] = ['Completed', 'Failed', 'Terminated'];
export const FAILURE_MARKER = '\n\n$OutOfProcData$:';

export function event(
  type: number,
  id: number,
  timestamp: string,
  extra: Record<string, unknown> = {},
): HistoryEvent {
  return { EventType: type, EventId: id, IsPlayed: false, Timestamp: timestamp, ...extra };
}

/** What the host hands an orchestrator's handler for one episode: the whole history and the instance's input. */
export const orchestrationTrigger = (
  history: HistoryEvent[],
  input: unknown,
  instanceId: string,
  isReplaying: boolean,
) => ({
  history,
  input,
  instanceId,
  isReplaying,
  parentInstanceId: '',
  upperSchemaVersion: 3,
  maximumShortTimerDuration: '6.00:00:00',
  longRunningTimerIntervalDuration: '3.00:00:00',
  defaultHttpAsyncRequestSleepTimeMillseconds: 30_000,
});

/** Leaf actions in the order the library numbers its tasks (compound tasks: children in order). */
export function flatten(actions: OrchestratorAction[]): OrchestratorAction[] {
  return actions.flatMap((a) => (a.compoundActions ? flatten(a.compoundActions) : [a]));
}

/** durable-functions pre-serialises string inputs (`Utils.processInput`); the host hands the activity the value. */
export function activityInput(input: unknown): unknown {
  if (typeof input !== 'string') return input;
  try {
    return JSON.parse(input) as unknown;
  } catch {
    return input;
  }
}
