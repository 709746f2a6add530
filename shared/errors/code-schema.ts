import { z } from 'zod';
import { storedErrorCode } from './codes';

/**
 * An error code as stored or passed between activities, parsed: any string in, one of ours out (`storedErrorCode`).
 * Apart from shared/errors/ so that the errors' vocabulary loads without zod (the CLI's help loads it).
 */
export const errorCodeSchema = z.string().transform(storedErrorCode);
