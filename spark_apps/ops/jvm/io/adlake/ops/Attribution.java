package io.adlake.ops;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.GenericRowWithSchema;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TwsTester;
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
  public static Dataset<Row> transform(Dataset<Row> events, String schemasJson, long windowMs,
                                       long skewMs, long ttlMs, boolean closeAtEndOfInput,
                                       boolean withRejectKey, String outputMode) {
    AttributionProcessor processor =
        new AttributionProcessor(schemasJson, windowMs, skewMs, ttlMs, closeAtEndOfInput);
    StructType keySchema = processor.schemas().key();
    MapFunction<Row, Row> keyOf = withRejectKey
        ? r -> new GenericRowWithSchema(
            new Object[] {r.getAs("request_id"), r.getAs("reject_key")}, keySchema)
        : r -> new GenericRowWithSchema(new Object[] {r.getAs("request_id"), null}, keySchema);
    return events
        .groupByKey(keyOf, Encoders.row(keySchema))
        .transformWithState(processor, TimeMode.EventTime(),
                            "update".equalsIgnoreCase(outputMode) ? OutputMode.Update()
                                                                  : OutputMode.Append(),
                            Encoders.row(processor.schemas().output()));
  }

  /** A {@link TwsTester} over a fresh processor; the watermark drops rows by Kafka timestamp. */
  public static Tester tester(String schemasJson, long windowMs, long skewMs, long ttlMs) {
    return new Tester(new AttributionProcessor(schemasJson, windowMs, skewMs, ttlMs, false));
  }

  /** Drives a {@link TwsTester} with plain Java values, which py4j passes without fuss. */
  public static final class Tester {
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
      return new GenericRowWithSchema(new Object[] {requestId, null}, processor.schemas().key());
    }

    /** {@code rows}: each a list of values in the input schema's order. */
    public List<Row> test(String requestId, List<List<Object>> rows) {
      StructType input = processor.schemas().input;
      List<Row> typed = new ArrayList<>();
      for (List<Object> values : rows) {
        Object[] v = values.toArray();
        for (int i = 0; i < v.length; i++) {  // py4j sends small ints as Integer
          if (v[i] instanceof Integer && input.fields()[i].dataType()
              instanceof org.apache.spark.sql.types.LongType) {
            v[i] = ((Integer) v[i]).longValue();
          }
        }
        typed.add(new GenericRowWithSchema(v, input));
      }
      return CollectionConverters.asJava(
          tester.test(key(requestId), CollectionConverters.asScala(typed).toList()));
    }

    public List<Row> setWatermark(long ms) {
      return CollectionConverters.asJava(tester.setWatermark(ms));
    }

    /** The value state's row, or null. */
    public Row peekValueState(String name, String requestId) {
      Option<Row> v = tester.peekValueState(name, key(requestId));
      return v.isDefined() ? v.get() : null;
    }

    /** The map state as a list of (key row, value row) pairs. */
    public List<List<Row>> peekMapState(String name, String requestId) {
      List<List<Row>> out = new ArrayList<>();
      scala.collection.immutable.Map<Row, Row> m = tester.peekMapState(name, key(requestId));
      CollectionConverters.asJava(m).forEach((k, v) -> out.add(List.of(k, v)));
      return out;
    }
  }
}
