"""The catalog: every topic, table, view, app and job of Adlake declared once, one module per
kind, with gold's tables under :mod:`adlake.catalog.gold` and a quality rule's vocabulary in
:mod:`adlake.catalog.expectations`. Read it through :mod:`adlake.registry`, its one way in (the
gold models and the rule vocabulary through their own modules)."""
