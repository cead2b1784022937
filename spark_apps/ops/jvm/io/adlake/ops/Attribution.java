package io.adlake.ops;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.GenericRowWithSchema;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TwsTester;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StructType;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * Entry points Python calls through py4j: the JVM {@code transformWithState} over a DataFrame
 * built in Python, and a {@link TwsTester} driver for the unit tests.
 */
public final class Attribution {
  private Attribution() {
  }

  /**
   * {@code events} (the processor's input columns, plus {@code reject_key} when
   * {@code withRejectKey}) grouped by {@code (request_id, reject_key)} through the attribution
   * processor with event-time timers; the event-time watermark is whatever {@code events}
   * carries. Append mode: every record is emitted once, when it is decided.
   */
  public static Dataset<Row> transform(Dataset<Row> events, String contractJson, long windowMs,
                                       long skewMs, long ttlMs, boolean closeAtEndOfInput,
                                       boolean withRejectKey, String outputMode) {
    AttributionProcessor processor =
        new AttributionProcessor(contractJson, windowMs, skewMs, ttlMs, closeAtEndOfInput);
    StructType keySchema = processor.contract().key();
    MapFunction<Row, Row> keyOf = withRejectKey
        ? r -> new GenericRowWithSchema(
            new Object[] {r.getAs("request_id"), r.getAs("reject_key")}, keySchema)
        : r -> new GenericRowWithSchema(new Object[] {r.getAs("request_id"), null}, keySchema);
    return events
        .groupByKey(keyOf, Encoders.row(keySchema))
        .transformWithState(processor, TimeMode.EventTime(),
                            "update".equalsIgnoreCase(outputMode) ? OutputMode.Update()
                                                                  : OutputMode.Append(),
                            Encoders.row(processor.contract().output()));
  }

  /** A {@link TwsTester} over a fresh processor; the watermark drops rows by Kafka timestamp. */
  public static Tester tester(String contractJson, long windowMs, long skewMs, long ttlMs) {
    return new Tester(new AttributionProcessor(contractJson, windowMs, skewMs, ttlMs, false));
  }

  /**
   * Drives a {@link TwsTester} for Python tests. Rows cross py4j as JSON, one string per call:
   * py4j converts a Python list element by element, one socket round trip each.
   */
  public static final class Tester {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final AttributionProcessor processor;
    private final TwsTester<Row, Row, Row> tester;

    Tester(AttributionProcessor processor) {
      this.processor = processor;
      AbstractFunction1<Row, Object> eventTime = new AbstractFunction1<>() {
        @Override
        public Object apply(Row r) {
          return r.<Long>getAs("kafka_ts_ms");
        }
      };
      this.tester = new TwsTester<>(processor, scala.collection.immutable.List$.MODULE$.empty(),
                                    TimeMode.EventTime(), OutputMode.Append(),
                                    Option.apply(eventTime));
    }

    private Row key(String requestId) {
      return new GenericRowWithSchema(new Object[] {requestId, null}, processor.contract().key());
    }

    /** {@code rowsJson}: a JSON array of rows, each an array of values in the input schema's
     * order; returns the output rows as a JSON array of arrays. */
    public String test(String requestId, String rowsJson) throws IOException {
      StructType input = processor.contract().input;
      List<Row> typed = new ArrayList<>();
      for (JsonNode values : JSON.readTree(rowsJson)) {
        Object[] v = new Object[input.length()];
        for (int i = 0; i < v.length; i++) {
          v[i] = value(values.get(i), input.fields()[i].dataType());
        }
        typed.add(new GenericRowWithSchema(v, input));
      }
      return toJson(CollectionConverters.asJava(
          tester.test(key(requestId), CollectionConverters.asScala(typed).toList())));
    }

    public String setWatermark(long ms) throws IOException {
      return toJson(CollectionConverters.asJava(tester.setWatermark(ms)));
    }

    /** The value state's row as a JSON array, or {@code null}. */
    public String peekValueState(String name, String requestId) throws IOException {
      Option<Row> v = tester.peekValueState(name, key(requestId));
      return JSON.writeValueAsString(v.isDefined() ? values(v.get()) : null);
    }

    /** The map state as a JSON array of [key row, value row] pairs. */
    public String peekMapState(String name, String requestId) throws IOException {
      List<List<List<Object>>> out = new ArrayList<>();
      scala.collection.immutable.Map<Row, Row> m = tester.peekMapState(name, key(requestId));
      CollectionConverters.asJava(m).forEach((k, v) -> out.add(List.of(values(k), values(v))));
      return JSON.writeValueAsString(out);
    }

    private static Object value(JsonNode node, DataType type) {
      if (node == null || node.isNull()) {
        return null;
      } else if (type instanceof LongType) {
        return node.asLong();
      } else if (type instanceof DoubleType) {
        return node.asDouble();
      } else if (type instanceof BooleanType) {
        return node.asBoolean();
      }
      return node.asText();
    }

    private static List<Object> values(Row row) {
      List<Object> out = new ArrayList<>();
      for (int i = 0; i < row.length(); i++) {
        out.add(row.get(i));
      }
      return out;
    }

    private static String toJson(List<Row> rows) throws IOException {
      List<List<Object>> out = new ArrayList<>();
      for (Row row : rows) {
        out.add(values(row));
      }
      return JSON.writeValueAsString(out);
    }
  }
}
