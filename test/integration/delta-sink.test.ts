import { deltaScenarios } from '../helpers/delta-scenarios';

/**
 * The delta sink, its tables read back by the tests' own reader (test/helpers/read-delta.mjs: written from the
 * protocol, no code of the sink's), so that `npm test` needs Node and npm alone. The conformance suite runs the same
 * scenarios with other engines reading (test/conformance/delta-rs.test.ts, delta-spark.test.ts).
 */
jest.setTimeout(240_000);

deltaScenarios('node');
