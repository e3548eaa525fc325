"""Settings read from the environment (prefix KERNELINDEX_)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


def default_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("kernelindex", appauthor=False))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KERNELINDEX_", extra="ignore")

    # A postgresql:// or postgresql+asyncpg:// URL. Unset: an embedded PostgreSQL under data_dir.
    database_url: str | None = None
    data_dir: Path | None = None
    environment: str = "development"  # "production" masks unexpected errors
    stale_after_days: int = 180

    # Protection for a public endpoint.
    max_query_depth: int = 8
    max_aliases: int = 15
    max_query_tokens: int = 2000
    max_page_size: int = 100
    # The most a query may ask for, computed before execution (kernelindex.graphql.cost): about the
    # largest response it can have, in items and KiB of long text. Measured by perf/worst_query.py.
    max_query_cost: int = 20_000
    # Long text (Workload.referenceSource) is served in pieces of at most this many UTF-8 bytes.
    max_text_bytes: int = 262_144
    introspection: bool | None = None  # None: on in development, off in production
    # GraphiQL on GET /graphql, from assets this server serves itself (kernelindex.web.graphiql). None:
    # served in development, not in production, where a public server serves the API and not an IDE.
    graphiql: bool | None = None
    max_body_bytes: int = 2_000_000  # a full submitRuns call (1,000 records) fits
    request_timeout_s: float = 10.0
    cors_allowed_origins: list[str] = []  # JSON list in the environment; empty: same origin only
    cache_max_age_s: int = 30
    # Encoded query responses kept until the data version moves (kernelindex.web.response_cache);
    # 0 entries turns the cache off. The TTL bounds how late a time-derived field (a run turning
    # stale after stale_after_days) can be; every expiry costs a full execution, so not too short.
    response_cache_entries: int = 2048
    response_cache_bytes: int = 64 * 1024 * 1024
    response_cache_ttl_s: float = 600.0
    # Workloads whose page values the read model keeps (kernelindex.services.read_model), each until
    # a write changes it; 0 turns the read model off (every request computes its values). About
    # 130 kB a workload (perf.dataset's, 200 runs each, page and list read): 500, KernelBench's
    # 270 problems with room, is some 65 MB a server process.
    read_model_workloads: int = 500
    # Queries answered by their plan, built once per document (kernelindex.graphql.plan); false: every
    # query executed by graphql-core, as the plan's differential test and perf/page_split.py compare.
    planned_execution: bool = True

    # Persisted queries (kernelindex.web.persisted). APQ documents clients register by hash are kept
    # per process in a bounded LRU (a miss costs the client one re-send of the full query); 0 entries
    # turns APQ registration off (hash-only requests then answer PERSISTED_QUERY_NOT_SUPPORTED).
    persisted_query_entries: int = 1000
    persisted_query_bytes: int = 8 * 1024 * 1024
    # Files or folders of operations registered at start-up, never evicted (JSON list in the
    # environment): .graphql/.gql (one document a file) and .json (an Apollo persisted-query manifest,
    # or {"<sha256>": "<document>"}). Checked against the schema: a bad file stops the server.
    persisted_query_files: list[Path] = []
    # The production allow-list: only the registered documents run (by hash or in full).
    persisted_only: bool = False

    # `ingest runs` refuses a larger file before reading it (kernelindex.ingest.runs.check_input_file).
    ingest_max_file_bytes: int = 2 * 1024**3

    # The request pool: up to 20 connections a process, as before, all of them kept. With 10 kept and 10
    # overflow, every request beyond the tenth at once opened a connection and closed it after (SQLAlchemy
    # drops an overflow connection when it comes back to a full pool): at 16 clients that churn cost
    # runs(first: 16) 27-29% of its rate (547/636 req/s against 749/891 kept, perf.loadgen --closed 16).
    db_pool_size: int = 20
    db_max_overflow: int = 0
    # Exports (/exports/*) run on a pool of their own with this many connections, and at most this many
    # at once per server process (more get 503 with Retry-After at once): they never take the
    # connections GraphQL, the twins and /healthz need. Each is cut off after export_timeout_s in all,
    # or when the client has not taken the next chunk for export_idle_timeout_s (a slow reader holds
    # a database transaction open).
    export_concurrency: int = 4
    export_timeout_s: float = 300.0
    export_idle_timeout_s: float = 15.0

    # Subscriptions (graphql-transport-ws on /graphql, kernelindex.web.subscriptions). Each websocket is
    # a task and a few kB; each subscription a notification queue, and a database connection only while
    # it reads an event. More websockets than this per server process are closed at once (1013, try again later).
    max_websocket_connections: int = 1000
    # Operations at once on one websocket (more: "Subscription limit reached" for that operation).
    max_subscriptions_per_connection: int = 20
    # Notifications a subscription may have waiting; one more and it is ended with SUBSCRIPTION_OVERFLOW.
    subscription_queue_size: int = 100
    # Seconds a message to a websocket's client may wait to be sent (its socket buffers full: the client is not
    # reading); past it the connection is ended, its operations stopped and its slot freed.
    subscription_send_timeout_s: float = 30.0

    @property
    def resolved_data_dir(self) -> Path:
        return self.data_dir or default_data_dir()

    @property
    def is_production(self) -> bool:
        return self.environment == "production"

    @property
    def introspection_enabled(self) -> bool:
        return (not self.is_production) if self.introspection is None else self.introspection

    @property
    def graphiql_enabled(self) -> bool:
        return (not self.is_production) if self.graphiql is None else self.graphiql


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
