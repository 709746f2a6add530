import * as df from 'durable-functions';
import { SYNC, syncOrchestrator } from '../shared/sync/orchestration';

/** One sync run (shared/sync/orchestration.ts): plan, slices of each stream, manifest. */
df.app.orchestration(SYNC.orchestrator, syncOrchestrator);
