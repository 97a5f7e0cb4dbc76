"""The wording of the ``coding-agent`` scenario: repositories, packages and names, and the templates of the
user's requests and rules, the agent's decisions and "next:" notes, the test failures and the protected paths.

Kept apart from the session code (:mod:`sim.scenarios._coding_session`) because it is data, and reads
best on its own. Order matters: entries are picked by index with the scenario's generator.
"""

from __future__ import annotations

REPOS = ("ledgerline", "harbor-sync", "quillstack", "tallyhouse", "parcel-api", "meridian-jobs", "fernwood-crm")
PACKAGES = ("billing", "export", "tenants", "reports", "auth", "jobs", "storage", "notify", "ledger", "search")
STEMS = (
    "invoice",
    "serializer",
    "handlers",
    "models",
    "client",
    "tasks",
    "schema",
    "views",
    "rounding",
    "currency",
    "writer",
    "retry",
    "scheduler",
    "mapper",
)
VERBS = ("export", "compute", "load", "render", "sync", "resolve", "apply", "build", "flush", "normalize")
NOUNS = ("rows", "total", "invoice", "batch", "tenant", "ledger", "report", "schedule", "payload", "summary")

REQUESTS = (
    "The nightly {pkg} job crashes for some tenants. Find the cause and fix it, with a regression test.",
    "Totals produced by the {pkg} module are off by a cent for some currencies. Please track it down.",
    "Make the {pkg} worker retry transient storage errors instead of failing the whole batch.",
    "The {pkg} tests are flaky on CI, maybe one run in ten. Figure out why and make them deterministic.",
    "Add a dry-run option to the {pkg} sync so we can see what it would change without writing anything.",
    "Customers report that the {pkg} report is empty when the date range crosses a month boundary. Fix it.",
)
CONSTRAINTS = (
    "never touch the migrations folder",
    "do not add any new dependencies",
    "don't modify anything under vendor/",
    "keep the public signature of `{func}` unchanged",
    "use the existing `{helper}` helper instead of writing a new one",
    "keep all new tests under tests/{pkg}/",
    "amounts must stay Decimal end to end, never float",
)
DECISIONS = (
    "I'll fix this in `{func}` by falling back to the tenant's default settings instead of raising",
    "I'll handle the missing value at the boundary in {path}, not deep inside the serializer",
    "I'll switch `{func}` to Decimal with ROUND_HALF_EVEN rather than patching each call site",
    "I'll wrap `{func}` in a bounded retry (3 attempts, exponential backoff) instead of raising the timeout",
    "I'll inject a fixed clock into `{func}` rather than adding sleeps to the tests",
    "I'll compute the month boundaries in UTC inside `{func}` and leave the callers alone",
)
CONTINUATIONS = (
    "next: update the CSV exporter in {path} to use the same fix",
    "next: add a regression test for the {pkg} retry path",
    "next: remove the deprecated `{func}` shim once its callers are migrated",
    "next: run the slow integration suite under tests/integration/{pkg} before merging",
    "next: document the new behaviour of `{func}` in docs/{pkg}.md",
)
ERRORS = (
    "KeyError: 'tenant_{n}'",
    "AssertionError: assert Decimal('{n}.37') == Decimal('{n}.38')",
    "TimeoutError: {pkg} batch {n} exceeded 30.0s",
    "AttributeError: 'NoneType' object has no attribute 'settings_{tag}'",
    "ValueError: period end {n} is before period start",
)
CORRECTIONS = (
    "Wait, before you go further: {constraint}.",
    "One more thing for this task: {constraint}. Other services depend on it.",
    "Please note: {constraint}.",
)
PROTECTED = (
    "config/production.toml",
    "deploy/secrets.enc.yaml",
    "infra/terraform/main.tf",
    ".github/workflows/release.yml",
)
