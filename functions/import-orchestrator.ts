import * as df from 'durable-functions';
import { IMPORT, importOrchestrator } from '../shared/imports/orchestration';

/** One import (shared/imports/orchestration.ts): items applied with the admin's session, a wait for one, the callback. */
df.app.orchestration(IMPORT.orchestrator, importOrchestrator);
