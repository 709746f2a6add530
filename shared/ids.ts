/**
 * The id of an accepted request (an export's, an import's): a UUID v4 (`randomUUID`), checked before it names an
 * orchestration instance or anything stored. Pure, so orchestrations may check it too.
 */
export const REQUEST_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
