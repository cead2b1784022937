"""The incremental materialized views: each one's source, keys, aggregates and its hand-written
quality rules (``rules``; the rules the catalog implies are derived by :mod:`adlake.quality.rules`).
"""

from __future__ import annotations

from adlake.catalog.expectations import ERROR, WARN, at_least
from adlake.catalog.types import Aggregate, View, lookup

VIEWS: dict[str, View] = {
    v.name: v
    for v in [
        View(
            "campaign_daily_totals",
            "silver_ad_impressions",
            ("campaign_id", "event_date"),
            (
                Aggregate("impressions", "count"),
                Aggregate("spend", "sum", "win_price"),
                Aggregate("min_price", "min", "win_price"),
                Aggregate("max_price", "max", "win_price"),
                Aggregate("avg_price", "avg", "win_price"),
                Aggregate("devices", "approx_distinct", "device_id"),
            ),
            rules=(
                at_least(
                    "max_price",
                    "min_price",
                    ERROR,
                    "A group's highest price is at least its lowest.",
                ),
            ),
            description="Impressions, spend and reach per campaign and day.",
        ),
        View(
            "page_clicks_hourly",
            "silver_page_clicks",
            ("page_id", "hour"),
            (
                Aggregate("clicks", "count"),
                Aggregate("users", "approx_distinct", "user_id"),
                Aggregate("first_click", "min", "event_time"),
                Aggregate("last_click", "max", "event_time"),
            ),
            key_exprs=(("hour", "date_trunc('hour', event_time)"),),
            rules=(
                at_least(
                    "last_click",
                    "first_click",
                    ERROR,
                    "A group's last click is not before its first.",
                ),
                at_least(
                    "clicks",
                    "users",
                    WARN,
                    "Clicks ≥ users (users is an HLL estimate, so it may overshoot a little).",
                ),
            ),
            description="Clicks and distinct users per page and hour.",
        ),
        View(
            "household_reach_by_geo",
            "silver_ad_requests",
            ("geo", "event_date"),
            (
                Aggregate("requests", "count"),
                Aggregate("households", "approx_distinct", "household_id"),
                Aggregate("floor_total", "sum", "floor_price"),
                Aggregate("avg_bids", "avg", "bid_count"),
            ),
            rules=(
                at_least(
                    "requests",
                    "households",
                    WARN,
                    "Requests ≥ households (households is an HLL estimate).",
                ),
            ),
            description="Requests and household reach per geo and day.",
        ),
    ]
}


def view(name: str) -> View:
    return lookup("view", VIEWS, name)
