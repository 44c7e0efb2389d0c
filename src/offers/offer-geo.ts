/**
 * Country filters on `geolocation` (issue 29 item 4). An offer's geolocation is a place and a country code
 * (`"California, US"`); Vast.ai matches a two-letter code against the country part, and the vastai client documents
 * `geolocation` as "Two letter country code. Works with operators =, !=, in, notin" (`search offers --help`), so
 * `geolocation=US` and `geolocation in [US,CA]` must find the Californian machine. A whole string still matches as
 * itself.
 *
 * Region names: the vastai client's `launch instance -r North_America` sends the region's countries as
 * `geolocation in [AG, BS, …]` (its REGIONS table); here a region name given as a filter value expands to the same
 * countries, so the raw API, `gpuplane search offers 'geolocation=Europe'` and the console's Regions box take them.
 * A constant module (no state): the CLI and the console import it.
 */

/** The continents of the vastai client's REGIONS table (vast.py, `launch instance --region`), as country codes. */
export const GEO_REGIONS: Readonly<Record<string, readonly string[]>> = {
  North_America: ['AG', 'BS', 'BB', 'BZ', 'CA', 'CR', 'CU', 'DM', 'DO', 'SV', 'GD', 'GT', 'HT', 'HN', 'JM', 'MX', 'NI', 'PA', 'KN', 'LC', 'VC', 'TT', 'US'],
  South_America: ['AR', 'BO', 'BR', 'CL', 'CO', 'EC', 'FK', 'GF', 'GY', 'PY', 'PE', 'SR', 'UY', 'VE'],
  Europe: [
    'AL', 'AD', 'AT', 'BY', 'BE', 'BA', 'BG', 'HR', 'CY', 'CZ', 'DK', 'EE', 'FI', 'FR', 'DE', 'GR', 'HU', 'IS', 'IE', 'IT', 'LV', 'LI', 'LT',
    'LU', 'MT', 'MD', 'MC', 'ME', 'NL', 'MK', 'NO', 'PL', 'PT', 'RO', 'RU', 'SM', 'RS', 'SK', 'SI', 'ES', 'SE', 'CH', 'UA', 'GB', 'VA', 'XK',
  ],
  Asia: [
    'AF', 'AM', 'AZ', 'BH', 'BD', 'BT', 'BN', 'KH', 'CN', 'GE', 'IN', 'ID', 'IR', 'IQ', 'IL', 'JP', 'JO', 'KZ', 'KW', 'KG', 'LA', 'LB', 'MY',
    'MV', 'MN', 'MM', 'NP', 'KP', 'OM', 'PK', 'PH', 'QA', 'SA', 'SG', 'KR', 'LK', 'SY', 'TW', 'TJ', 'TH', 'TL', 'TR', 'TM', 'AE', 'UZ', 'VN',
    'YE', 'HK', 'MO',
  ],
  Oceania: ['AS', 'AU', 'CK', 'FJ', 'PF', 'GU', 'KI', 'MH', 'FM', 'NR', 'NC', 'NZ', 'NU', 'MP', 'PW', 'PG', 'PN', 'WS', 'SB', 'TK', 'TO', 'TV', 'VU', 'WF'],
  Africa: [
    'DZ', 'AO', 'BJ', 'BW', 'BF', 'BI', 'CV', 'CM', 'CF', 'TD', 'KM', 'CG', 'CD', 'CI', 'DJ', 'EG', 'GQ', 'ER', 'SZ', 'ET', 'GA', 'GM', 'GH',
    'GN', 'GW', 'KE', 'LS', 'LR', 'LY', 'MG', 'MW', 'ML', 'MR', 'MU', 'MA', 'MZ', 'NA', 'NE', 'NG', 'RW', 'ST', 'SN', 'SC', 'SL', 'SO', 'ZA',
    'SS', 'SD', 'TZ', 'TG', 'TN', 'UG', 'ZM', 'ZW',
  ],
};

const COUNTRY_CODE = /^[A-Za-z]{2}$/;

/** Region names compare without regard to case, `_` and spaces alike (the clients turn `North_America` into `North America`). */
const regionKey = (s: string) => s.trim().replace(/[\s_]+/g, '_').toLowerCase();
const REGION_BY_KEY: ReadonlyMap<string, readonly string[]> = new Map(Object.entries(GEO_REGIONS).map(([name, codes]) => [regionKey(name), codes]));

/** The countries of a region name (`Europe`, `north america` …), or undefined when `s` names no region. */
export function regionCountries(s: string): readonly string[] | undefined {
  return REGION_BY_KEY.get(regionKey(s));
}

/** A two-letter country code as offers carry it (upper case), or undefined when `s` is not one. */
export function countryCode(s: string): string | undefined {
  const t = s.trim();
  return COUNTRY_CODE.test(t) ? t.toUpperCase() : undefined;
}

/** The country of a geolocation: its last comma-separated part when that is a two-letter code (`"California, US"` → `US`). */
export function countryOf(geolocation: string | null): string | null {
  if (!geolocation) return null;
  const comma = geolocation.lastIndexOf(',');
  return countryCode(comma === -1 ? geolocation : geolocation.slice(comma + 1)) ?? null;
}
