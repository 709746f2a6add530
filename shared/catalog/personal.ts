import type { SelectionSetNode } from 'graphql';
import { personalFields, type PersonalField } from '../personal/fields';
import { resolvePersonal, type PersonalDefault } from '../personal/policy';
import { keyPaths, recordPath, streamSchema, type StreamDefinition } from '../streams';
import { fieldsOf, parseDocument, selectionAt } from '../streams/document';
import { editRecordSelection } from './edit';

/**
 * The streams as a run reads them: each personal field's `default` made SYNC_PERSONAL_DATA's choice, and a dropped
 * field not even asked of the tenant (taken out of the document; where that would leave an empty selection, the
 * field is asked and dropped from each page instead — shared/personal/policy.ts does both).
 */
export function withPersonalPolicy(streams: StreamDefinition[], chosen: PersonalDefault): StreamDefinition[] {
  return resolvePersonal(streams, chosen).map((s) => {
    const dropped = Object.entries(s.personal ?? {})
      .filter(([, p]) => p === 'drop')
      .map(([f]) => f.split('.'));
    if (!dropped.length) return s;
    try {
      const { document } = editRecordSelection(s.document, recordPath(s), { remove: dropped });
      const next = streamSchema.safeParse({ ...s, document });
      return next.success ? (next.data as StreamDefinition) : s;
    } catch {
      return s;
    }
  });
}

/** Every leaf a record of the stream carries by its selection, dotted (aliases as answered). */
export function recordLeaves(stream: StreamDefinition): string[] {
  const doc = parseDocument(stream.document);
  if (typeof doc === 'string') return [];
  const walk = (set: SelectionSetNode, prefix: string): string[] =>
    fieldsOf(set, doc.fragments).flatMap((f) =>
      f.selectionSet ? walk(f.selectionSet, `${prefix}${f.key}.`) : [`${prefix}${f.key}`],
    );
  const set = selectionAt(doc, recordPath(stream));
  return set ? [...new Set(walk(set, ''))] : [];
}

/**
 * Fields of a stream that look like personal data (shared/personal/fields.ts) and have no policy in its `personal`:
 * a catalog discovered by an earlier version, or a streams file written by hand, sends them as the tenant did.
 */
export function unmarkedPersonal(stream: StreamDefinition): PersonalField[] {
  const name = stream.document.match(/\{\s*(\w+)/)?.[1];
  return personalFields(recordLeaves(stream), [stream.name, ...(name ? [name] : [])], {
    except: [...keyPaths(stream), ...(stream.incremental ? [stream.incremental.field] : [])],
  }).filter((f) => !(f.field in (stream.personal ?? {})));
}
