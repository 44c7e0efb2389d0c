/**
 * What other features use of offer search: the filter language of search bodies (volume offers, benchmarks and the
 * serverless autoscaler's worker choice parse and select with it, so their searches read as `POST /bundles/` does)
 * and the offer field table (names, aliases, ranges, the GPU-name and geolocation matching). The definitions stay
 * where offer search uses them (filter.ts, filter-parse.ts, offer-fields.ts: together far over a file's size); this
 * module names the part of them that is public, and another feature imports nothing else of src/offers/ but the
 * service and schema modules.
 */
export { coerce, parseFilterBody, selectRows, type FieldDef, type FieldTable, type FieldType } from './filter.js';
export {
  GEOLOCATION_MATCHING,
  normalizeGpuName,
  OFFER_FIELD_ALIASES,
  OFFER_FIELD_RANGES,
  OFFER_FIELDS,
  QUERY_UNIT_MULT,
} from './offer-fields.js';
