import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { streamTaskSchema } from '../shared/exports/orchestration';
import { runExportStream } from '../shared/exports/run';

/** Activity: one stream of an export to its blob, streaming; the outcome (file or error) for the manifest. */
df.app.activity('exportStream', {
  handler: (input: unknown) => {
    const app = appContext();
    return runExportStream(app.exports(), app.access().graphql, streamTaskSchema.parse(input));
  },
});
