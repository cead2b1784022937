package io.adlake.ops;

import java.util.HashMap;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * Everything the attribution processor knows by name, parsed from the JSON Python sends
 * ({@code spark_apps/common/attribution/contract.py}, {@code contract_json}): the schemas
 * (input, output, key and one per state variable), the input kinds, the record types and the
 * DLQ fields. Nothing here is declared in Java, so the two engines cannot drift apart; the
 * constructor checks that every field the processor reads or writes by position is where it
 * expects it.
 */
public final class Contract implements java.io.Serializable {
  private static final long serialVersionUID = 1L;

  final StructType input, output, key, request, idKey, impression, callback, timers, closedId,
      expiry;
  final String kindRequest, kindImpression, kindCallback;
  final String attributedImpression, attributedCallback, requestClosed, orphanImpression,
      orphanCallback, rejected;
  final String[] dlqFields;
  private final HashMap<String, Integer> outputIndex = new HashMap<>();

  private Contract(Map<String, StructType> s, JsonNode names, JsonNode dlqFields) {
    input = require(s, "input", "kind", "request_id", "impression_id", "callback_id",
                    "campaign_id", "creative_id", "event_type", "value", "event_time_ms",
                    "kafka_ts_ms");
    output = require(s, "output", "record_type", "request_id");
    key = require(s, "key", "request_id");
    request = require(s, "request", "event_time_ms", "kafka_ts_ms");
    idKey = require(s, "id_key", "id");
    impression = require(s, "impression", "campaign_id", "creative_id", "event_time_ms",
                         "kafka_ts_ms", "attributed");
    callback = require(s, "callback", "impression_id", "event_type", "value", "event_time_ms",
                       "kafka_ts_ms", "attributed");
    timers = require(s, "timers", "close_at_ms", "tombstone_until_ms");
    closedId = require(s, "closed_id", "kind");
    expiry = require(s, "expiry", "expire_at_ms");
    kindRequest = name(names, "request");
    kindImpression = name(names, "impression");
    kindCallback = name(names, "callback");
    attributedImpression = name(names, "attributed_impression");
    attributedCallback = name(names, "attributed_callback");
    requestClosed = name(names, "request_closed");
    orphanImpression = name(names, "orphan_impression");
    orphanCallback = name(names, "orphan_callback");
    rejected = name(names, "rejected");
    if (dlqFields == null || !dlqFields.isArray()) {
      throw new IllegalArgumentException("contract JSON has no 'dlq_fields' list");
    }
    this.dlqFields = new String[dlqFields.size()];
    for (int i = 0; i < this.dlqFields.length; i++) {
      this.dlqFields[i] = dlqFields.get(i).asText();
    }
    String[] columns = output.fieldNames();
    for (int i = 0; i < columns.length; i++) {
      outputIndex.put(columns[i], i);
    }
  }

  int outputIndex(String name) {
    Integer i = outputIndex.get(name);
    if (i == null) {
      throw new IllegalArgumentException("output schema has no column " + name);
    }
    return i;
  }

  public StructType output() {
    return output;
  }

  public StructType key() {
    return key;
  }

  private static String name(JsonNode names, String name) {
    JsonNode node = names == null ? null : names.get(name);
    if (node == null || !node.isTextual()) {
      throw new IllegalArgumentException("contract JSON has no name '" + name + "'");
    }
    return node.asText();
  }

  /** The named schema; its leading fields must be {@code prefix}, in order: the processor
   * reads state rows by position. */
  private static StructType require(Map<String, StructType> s, String name, String... prefix) {
    StructType schema = s.get(name);
    if (schema == null) {
      throw new IllegalArgumentException("contract JSON has no '" + name + "' schema");
    }
    String[] names = schema.fieldNames();
    for (int i = 0; i < prefix.length; i++) {
      if (i >= names.length || !names[i].equals(prefix[i])) {
        throw new IllegalArgumentException(
            "schema '" + name + "' must start with " + String.join(", ", prefix) + "; got "
            + String.join(", ", names));
      }
    }
    return schema;
  }

  static Contract parse(String json) {
    try {
      JsonNode root = new ObjectMapper().readTree(json);
      Map<String, StructType> schemas = new HashMap<>();
      JsonNode schemasNode = root.get("schemas");
      if (schemasNode == null) {
        throw new IllegalArgumentException("contract JSON has no 'schemas'");
      }
      var it = schemasNode.fields();
      while (it.hasNext()) {
        var e = it.next();
        schemas.put(e.getKey(), (StructType) DataType.fromJson(e.getValue().toString()));
      }
      return new Contract(schemas, root.get("names"), root.get("dlq_fields"));
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("contract JSON is not valid: " + e.getMessage(), e);
    }
  }
}
