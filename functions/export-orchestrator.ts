import * as df from 'durable-functions';
import { EXPORT, exportOrchestrator } from '../shared/exports/orchestration';

/** One export (shared/exports/orchestration.ts): a file per stream, the manifest, the signed callback. */
df.app.orchestration(EXPORT.orchestrator, exportOrchestrator);
