"""The platform on one machine: pinned versions (:mod:`.versions`) and ``make setup``
(:mod:`.bootstrap`), the local Kafka broker (:mod:`.kafka`), ``make up``/``make down``
(:mod:`.platform`), the platform's secrets (:mod:`.credentials`) and the compose file's generated
versions (:mod:`.compose_versions`). Nothing here runs in a Spark job.

``versions`` and ``bootstrap`` are standard-library only: ``make setup`` runs them with the
system Python before any virtual environment exists.
"""
