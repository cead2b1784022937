"""The parsing tests of ``tests/spark_apps/common/test_parsing.py``, on the ops runtime (Spark
4.3): the operational apps' DLQs must give the reasons silver gives on the lake runtime."""

from tests.spark_apps.common.test_parsing import (  # noqa: F401 - collected here too
    test_a_too_large_value_is_never_parsed_and_keeps_its_head_and_size,
    test_a_topic_none_of_the_schemas_name_is_unknown_topic,
    test_a_value_is_exactly_one_json_object,
    test_parse_json_by_topic_gives_the_same_reasons,
    test_parse_json_gives_every_case_of_the_shared_vector_its_reason,
)
