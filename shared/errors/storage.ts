import type { ErrorTable } from './text';

/** Where runs keep their state and deliver: storage, the sinks, and a run whose orchestration stopped. */
export const STORAGE_ERRORS = {
  storage_unavailable: {
    title: 'Storage refused or did not answer',
    action:
      'Check AzureWebJobsStorage and that the app’s identity has Storage Blob and Table Data Contributor; the next run resumes from its checkpoints.',
  },
  state_damaged: {
    title: 'Stored state is damaged',
    action:
      'Retrying cannot help: start the state the message names over — a sync stream’s with `tenant-integrations sync --full` (with the app’s settings), whose next pass delivers every record again.',
  },
  storage_block_limit: {
    title: 'A blob reached its block limit',
    action:
      'The blob sink’s file of the stream named in the message would hold more than Blob Storage’s 50 000 blocks (one per page with changes): raise the stream’s pageSize (at most 1 000) in SYNC_STREAMS_FILE, then start the run over (`tenant-integrations sync --full` with the app’s settings).',
  },
  sink_rejected: {
    title: 'Sink refused a record',
    action: 'Fix the record named in the message at the source; the run resumes from the same page.',
  },
  sink_failed: {
    title: 'Sink failed',
    action: 'The downstream receiver failed; fix it — the next run resumes from the same page.',
  },
  sink_location_taken: {
    title: 'A sink’s place for a stream is not its own',
    action:
      'The folder or table the message names holds what the app did not make, and nothing there was changed: point the sink at a place of its own (delta:PATH, DELTA_URL), or give the stream another name (its `name` in SYNC_STREAMS_FILE). The other streams went on.',
  },
  stream_names_collide: {
    title: 'Two streams would be written to one place',
    action:
      'Give one of the streams the message names another name (its `name` in SYNC_STREAMS_FILE; `tenant-integrations discover --out FILE` writes one to edit). Neither was read or written; the others went on.',
  },
  run_stopped: {
    title: 'Run stopped',
    action:
      'The orchestration was terminated or stopped before it ended its run; the next run resumes from the checkpoints.',
  },
} as const satisfies ErrorTable;
