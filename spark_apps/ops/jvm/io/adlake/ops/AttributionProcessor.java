package io.adlake.ops;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.GenericRowWithSchema;
import org.apache.spark.sql.streaming.ExpiredTimerInfo;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.StatefulProcessorHandle;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.types.StructType;

import scala.jdk.javaapi.CollectionConverters;

/**
 * The attribution rules on the JVM: a line-for-line port of the Python
 * {@code spark_apps/common/attribution/processor.py}, whose module docstring states the rules
 * (match windows, any arrival order, once, close, tombstone, lifetime bound). Both processors
 * keep the same state variables with the same schemas and are pinned by the same tests, run
 * through each engine's {@code TwsTester}.
 *
 * <p>Why two: a Python processor pays a socket round trip to the JVM for every state operation
 * and runs only in micro-batch mode; this one runs inside the JVM task. The Python one remains
 * the executable specification and the batch path of the lake runtime (Spark 4.2).
 *
 * <p>Keys are {@code (request_id, reject_key)}: a row with a non-null {@code reject_key} is a
 * record that failed validation, alone under its Kafka coordinates; it is emitted at once as a
 * {@code rejected} record carrying its DLQ fields, without touching state.
 *
 * <p>Schemas (input, output, key and one per state variable), kinds, record types and DLQ
 * fields come from Python as JSON ({@link Contract}), so each is declared once.
 */
public final class AttributionProcessor extends StatefulProcessor<Row, Row, Row> {
  private static final long serialVersionUID = 1L;

  private final long windowMs, skewMs, ttlMs;
  private final boolean closeAtEndOfInput;
  private final Contract contract;

  private transient CachedValue request, timers, expiry;
  private transient CachedMap impressions, callbacks, closedIds;

  public AttributionProcessor(String contractJson, long windowMs, long skewMs, long ttlMs,
                              boolean closeAtEndOfInput) {
    this.contract = Contract.parse(contractJson);
    this.windowMs = windowMs;
    this.skewMs = skewMs;
    this.ttlMs = ttlMs;
    this.closeAtEndOfInput = closeAtEndOfInput;
  }

  public Contract contract() {
    return contract;
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    arrivalOrder = arrivalOrder();
    StatefulProcessorHandle h = getHandle();
    request = new CachedValue(h.getValueState("request", Encoders.row(contract.request),
                                              TTLConfig.NONE()));
    impressions = new CachedMap(h.getMapState("impressions", Encoders.row(contract.idKey),
                                              Encoders.row(contract.impression), TTLConfig.NONE()),
                                contract.idKey);
    callbacks = new CachedMap(h.getMapState("callbacks", Encoders.row(contract.idKey),
                                            Encoders.row(contract.callback), TTLConfig.NONE()),
                              contract.idKey);
    timers = new CachedValue(h.getValueState("timers", Encoders.row(contract.timers),
                                             TTLConfig.NONE()));
    closedIds = new CachedMap(h.getMapState("closed_ids", Encoders.row(contract.idKey),
                                            Encoders.row(contract.closedId), TTLConfig.NONE()),
                              contract.idKey);
    expiry = new CachedValue(h.getValueState("expiry", Encoders.row(contract.expiry),
                                             TTLConfig.NONE()));
  }

  /** A call for a (possibly different) key begins: forget the cached copies. */
  private void begin() {
    request.reset();
    impressions.reset();
    callbacks.reset();
    timers.reset();
    closedIds.reset();
    expiry.reset();
  }

  private boolean inWindow(long partnerMs, long itemMs) {
    long d = itemMs - partnerMs;
    return -skewMs <= d && d <= windowMs;
  }

  // -- input ------------------------------------------------------------------------------------

  /** The query's event-time watermark; a batch query has none (Spark raises), and nothing is
   * behind it. */
  private static long watermark(TimerValues timerValues) {
    try {
      return timerValues.getCurrentWatermarkInMs();
    } catch (Exception e) {  // Scala throws SparkException (checked) undeclared
      if (e instanceof org.apache.spark.SparkException) {
        return NO_WATERMARK;
      }
      throw e;
    }
  }

  static final long NO_WATERMARK = -1L;

  private int arrivalRank(String kind) {
    return contract.kindRequest.equals(kind) ? 0 : contract.kindImpression.equals(kind) ? 1 : 2;
  }

  /** Rows of one call in arrival order: Kafka timestamp, then request before impression before
   * callback. Built in {@link #init} on the executor (a comparator is not serializable). */
  private transient Comparator<Row> arrivalOrder;

  private Comparator<Row> arrivalOrder() {
    return Comparator
        .comparingLong((Row r) -> r.<Long>getAs("kafka_ts_ms"))
        .thenComparingInt(r -> arrivalRank(r.getAs("kind")))
        .thenComparingLong(r -> r.<Long>getAs("event_time_ms"))
        .thenComparing(r -> Objects.toString(r.getAs("impression_id"), ""))
        .thenComparing(r -> Objects.toString(r.getAs("callback_id"), ""));
  }

  @Override
  public scala.collection.Iterator<Row> handleInputRows(Row key, scala.collection.Iterator<Row> rows,
                                                        TimerValues timerValues) {
    List<Row> out = new ArrayList<>();
    List<Row> ordered = new ArrayList<>(CollectionConverters.asJava(rows.toSeq()));
    if (key.length() > 1 && !key.isNullAt(1)) {
      for (Row row : ordered) {
        out.add(rejected(row));
      }
      return CollectionConverters.asScala(out.iterator());
    }
    begin();
    String requestId = key.getString(0);
    long watermark = watermark(timerValues);
    ordered.sort(arrivalOrder);
    if (closeAtEndOfInput) {
      for (Row row : ordered) {
        onRow(requestId, row, out);
      }
      close(requestId, watermark, false, out);
      return CollectionConverters.asScala(out.iterator());
    }
    if (!ordered.isEmpty() && !expiry.exists()) {
      long first = Long.MAX_VALUE;
      for (Row row : ordered) {
        first = Math.min(first, row.<Long>getAs("event_time_ms"));
      }
      long expireAt = Math.max(watermark, first) + ttlMs;
      getHandle().registerTimer(expireAt);
      expiry.update(row(contract.expiry, expireAt));
    }
    for (Row row : ordered) {
      onRow(requestId, row, out);
    }
    scheduleClose(requestId, watermark, out);
    return CollectionConverters.asScala(out.iterator());
  }

  private void onRow(String requestId, Row row, List<Row> out) {
    String kind = row.getAs("kind");
    if (isClosed()) {
      afterClose(requestId, row, out);
    } else if (contract.kindRequest.equals(kind)) {
      onRequest(requestId, row, out);
    } else if (contract.kindImpression.equals(kind)) {
      onImpression(requestId, row, out);
    } else {
      onCallback(requestId, row, out);
    }
  }

  private void onRequest(String requestId, Row row, List<Row> out) {
    if (request.exists()) {
      return;  // a duplicate request: the first one stands
    }
    request.update(row(contract.request, row.getAs("event_time_ms"), row.getAs("kafka_ts_ms")));
    // Items that waited for this request can be attributed now.
    for (Map.Entry<String, Row> e : impressions.snapshot()) {
      tryImpression(requestId, e.getKey(), e.getValue(), out);
    }
  }

  private void onImpression(String requestId, Row row, List<Row> out) {
    String impId = row.getAs("impression_id");
    if (impressions.contains(impId)) {
      return;  // duplicate
    }
    Row imp = row(contract.impression, row.getAs("campaign_id"), row.getAs("creative_id"),
                  row.getAs("event_time_ms"), row.getAs("kafka_ts_ms"), false);
    impressions.put(impId, imp);
    tryImpression(requestId, impId, imp, out);
    // Callbacks that arrived before their impression.
    for (Map.Entry<String, Row> e : callbacks.snapshot()) {
      if (impId.equals(e.getValue().getString(0))) {
        tryCallback(requestId, e.getKey(), e.getValue(), out);
      }
    }
  }

  private void onCallback(String requestId, Row row, List<Row> out) {
    String cbId = row.getAs("callback_id");
    if (callbacks.contains(cbId)) {
      return;  // duplicate
    }
    Row cb = row(contract.callback, row.getAs("impression_id"), row.getAs("event_type"),
                 row.getAs("value"), row.getAs("event_time_ms"), row.getAs("kafka_ts_ms"), false);
    callbacks.put(cbId, cb);
    tryCallback(requestId, cbId, cb, out);
  }

  // impression state: campaign_id, creative_id, event_time_ms, kafka_ts_ms, attributed
  private void tryImpression(String requestId, String impId, Row imp, List<Row> out) {
    if (imp.getBoolean(4) || !request.exists()) {
      return;
    }
    Row req = request.get();
    long reqMs = req.getLong(0), impMs = imp.getLong(2);
    if (!inWindow(reqMs, impMs)) {
      return;  // stays waiting; an orphan at close
    }
    impressions.put(impId, row(contract.impression, imp.get(0), imp.get(1), impMs, imp.get(3), true));
    out.add(new Out(contract.attributedImpression, requestId)
        .set("impression_id", impId).set("campaign_id", imp.get(0)).set("creative_id", imp.get(1))
        .set("request_time_ms", reqMs).set("impression_time_ms", impMs)
        .set("source_kafka_ts_ms", Math.max(req.getLong(1), imp.getLong(3))).row());
  }

  // callback state: impression_id, event_type, value, event_time_ms, kafka_ts_ms, attributed
  private void tryCallback(String requestId, String cbId, Row cb, List<Row> out) {
    if (cb.getBoolean(5)) {
      return;
    }
    String impId = cb.getString(0);
    Row imp = impressions.get(impId);
    if (imp == null) {
      return;  // waits for its impression
    }
    long impMs = imp.getLong(2), cbMs = cb.getLong(3);
    if (!inWindow(impMs, cbMs)) {
      return;
    }
    callbacks.put(cbId, row(contract.callback, impId, cb.get(1), cb.get(2), cbMs, cb.get(4), true));
    Row req = request.get();
    out.add(new Out(contract.attributedCallback, requestId)
        .set("impression_id", impId).set("callback_id", cbId).set("campaign_id", imp.get(0))
        .set("creative_id", imp.get(1)).set("event_type", cb.get(1)).set("value", cb.get(2))
        .set("request_time_ms", req == null ? null : req.get(0)).set("impression_time_ms", impMs)
        .set("callback_time_ms", cbMs)
        .set("source_kafka_ts_ms", Math.max(cb.getLong(4), imp.getLong(3))).row());
  }

  // -- closing ----------------------------------------------------------------------------------

  // timers state: close_at_ms, tombstone_until_ms (set once the key is closed)
  private boolean isClosed() {
    Row t = timers.get();
    return t != null && !t.isNullAt(1);
  }

  /** When this open key closes: its request's window end, or, without a request, the first
   * waiting item's. */
  private Long closeTime() {
    Row req = request.get();
    if (req != null) {
      return req.getLong(0) + windowMs;
    }
    Long first = null;
    for (Row imp : impressions.load().values()) {
      first = first == null ? imp.getLong(2) : Math.min(first, imp.getLong(2));
    }
    for (Row cb : callbacks.load().values()) {
      first = first == null ? cb.getLong(3) : Math.min(first, cb.getLong(3));
    }
    return first == null ? null : first + windowMs;
  }

  private void scheduleClose(String requestId, long watermark, List<Row> out) {
    if (isClosed()) {
      return;
    }
    Long closeAt = closeTime();
    Row t = timers.get();
    Long current = t == null || t.isNullAt(0) ? null : t.getLong(0);
    if (Objects.equals(closeAt, current) || closeAt == null) {
      return;
    }
    if (current != null) {
      getHandle().deleteTimer(current);
    }
    if (closeAt <= watermark) {
      // Already behind the watermark (a late key): close now, a timer would never fire.
      // Record this close time first: the replaced one must not set the tombstone's end.
      timers.update(row(contract.timers, closeAt, null));
      close(requestId, watermark, true, out);
      return;
    }
    getHandle().registerTimer(closeAt);
    timers.update(row(contract.timers, closeAt, null));
  }

  @Override
  public scala.collection.Iterator<Row> handleExpiredTimer(Row key, TimerValues timerValues,
                                                           ExpiredTimerInfo expiredTimerInfo) {
    begin();
    List<Row> out = new ArrayList<>();
    String requestId = key.getString(0);
    long firing = expiredTimerInfo.getExpiryTimeInMs();
    long watermark = watermark(timerValues);
    Row exp = expiry.get();
    if (exp != null && firing == exp.getLong(0)) {
      // The lifetime bound: close what is open, then forget the key entirely.
      if (!isClosed() && closeTime() != null) {
        close(requestId, watermark, true, out);
      }
      forget(firing);
      return CollectionConverters.asScala(out.iterator());
    }
    Row t = timers.get();
    if (t != null) {
      Long closeAt = t.isNullAt(0) ? null : t.getLong(0);
      Long tombstoneUntil = t.isNullAt(1) ? null : t.getLong(1);
      if (tombstoneUntil != null && firing == tombstoneUntil) {
        forget(firing);  // the tombstone's time is up: the key is forgotten
      } else if (tombstoneUntil == null && closeAt != null && firing == closeAt) {
        close(requestId, watermark, true, out);
      }
    }
    return CollectionConverters.asScala(out.iterator());
  }

  private void close(String requestId, long watermark, boolean tombstone, List<Row> out) {
    Map<String, String> closed = new LinkedHashMap<>();
    Row req = request.get();
    if (req != null) {
      long imps = 0, cbs = 0, source = req.getLong(1);
      for (Row imp : impressions.load().values()) {
        if (imp.getBoolean(4)) {
          imps++;
          source = Math.max(source, imp.getLong(3));
        }
      }
      for (Row cb : callbacks.load().values()) {
        if (cb.getBoolean(5)) {
          cbs++;
          source = Math.max(source, cb.getLong(4));
        }
      }
      out.add(new Out(contract.requestClosed, requestId).set("request_time_ms", req.getLong(0))
          .set("impressions", imps).set("callbacks", cbs).set("filled", imps > 0)
          .set("source_kafka_ts_ms", source).row());
      closed.put(requestId, contract.kindRequest);
    }
    for (Map.Entry<String, Row> e : impressions.snapshot()) {
      Row imp = e.getValue();
      closed.put(e.getKey(), contract.kindImpression);
      if (!imp.getBoolean(4)) {
        out.add(new Out(contract.orphanImpression, requestId).set("impression_id", e.getKey())
            .set("campaign_id", imp.get(0)).set("creative_id", imp.get(1))
            .set("impression_time_ms", imp.getLong(2)).set("source_kafka_ts_ms", imp.getLong(3))
            .row());
      }
    }
    for (Map.Entry<String, Row> e : callbacks.snapshot()) {
      Row cb = e.getValue();
      closed.put(e.getKey(), contract.kindCallback);
      if (!cb.getBoolean(5)) {
        out.add(new Out(contract.orphanCallback, requestId).set("impression_id", cb.get(0))
            .set("callback_id", e.getKey()).set("event_type", cb.get(1)).set("value", cb.get(2))
            .set("callback_time_ms", cb.getLong(3)).set("source_kafka_ts_ms", cb.getLong(4))
            .row());
      }
    }
    Row t = timers.get();
    Long closeAt = t == null || t.isNullAt(0) ? null : t.getLong(0);
    // Every due timer lands here at a checkpoint boundary, so only the state that holds anything
    // is cleared: closed_ids is empty until a key closes (it is written only here and after the
    // close), and with a tombstone the timers value is rewritten below rather than cleared first.
    request.clear();
    impressions.clear();
    callbacks.clear();
    if (!tombstone) {
      timers.clear();
      return;
    }
    for (Map.Entry<String, String> e : closed.entrySet()) {
      closedIds.put(e.getKey(), row(contract.closedId, e.getValue()));
    }
    // The tombstone lives one more window past whichever is later: the close time or now.
    long tombstoneUntil = Math.max(closeAt == null || closeAt == 0 ? watermark : closeAt,
                                   watermark) + windowMs;
    getHandle().registerTimer(tombstoneUntil);
    timers.update(row(contract.timers, closeAt, tombstoneUntil));
  }

  /** An event for a key that was already closed: emitted at once (once), never dropped. */
  private void afterClose(String requestId, Row row, List<Row> out) {
    String kind = row.getAs("kind");
    String itemId = contract.kindRequest.equals(kind) ? requestId
        : contract.kindImpression.equals(kind) ? row.getAs("impression_id") : row.getAs("callback_id");
    if (closedIds.contains(itemId)) {
      return;  // already accounted for when the key closed
    }
    closedIds.put(itemId, row(contract.closedId, kind));
    Object kafkaTs = row.getAs("kafka_ts_ms"), t = row.getAs("event_time_ms");
    if (contract.kindRequest.equals(kind)) {
      out.add(new Out(contract.requestClosed, requestId).set("request_time_ms", t).set("impressions", 0L)
          .set("callbacks", 0L).set("filled", false).set("source_kafka_ts_ms", kafkaTs).row());
    } else if (contract.kindImpression.equals(kind)) {
      out.add(new Out(contract.orphanImpression, requestId).set("impression_id", row.getAs("impression_id"))
          .set("campaign_id", row.getAs("campaign_id")).set("creative_id", row.getAs("creative_id"))
          .set("impression_time_ms", t).set("source_kafka_ts_ms", kafkaTs).row());
    } else {
      out.add(new Out(contract.orphanCallback, requestId).set("impression_id", row.getAs("impression_id"))
          .set("callback_id", row.getAs("callback_id")).set("event_type", row.getAs("event_type"))
          .set("value", row.getAs("value")).set("callback_time_ms", t)
          .set("source_kafka_ts_ms", kafkaTs).row());
    }
  }

  private void clearAll() {
    request.clear();
    impressions.clear();
    callbacks.clear();
    timers.clear();
    closedIds.clear();
  }

  /** Clear every state variable and every pending timer of the key but the one firing. */
  private void forget(long firing) {
    Set<Long> pending = new HashSet<>();
    Row t = timers.get();
    if (t != null) {
      for (int i = 0; i < 2; i++) {
        if (!t.isNullAt(i)) {
          pending.add(t.getLong(i));
        }
      }
    }
    Row exp = expiry.get();
    if (exp != null) {
      pending.add(exp.getLong(0));
    }
    pending.remove(firing);
    for (long timer : pending) {
      getHandle().deleteTimer(timer);
    }
    clearAll();
    expiry.clear();
  }

  private Row rejected(Row row) {
    Out o = new Out(contract.rejected, row.getAs("request_id"))
        .set("source_kafka_ts_ms", row.getAs("kafka_ts_ms"));
    for (String name : contract.dlqFields) {
      o.set(name, row.getAs(name));
    }
    return o.row();
  }

  // -- rows -------------------------------------------------------------------------------------

  private static Row row(StructType schema, Object... values) {
    return new GenericRowWithSchema(values, schema);
  }

  /** An output row: every column null unless set. */
  private final class Out {
    private final Object[] values = new Object[contract.output.length()];

    Out(String recordType, String requestId) {
      set("record_type", recordType).set("request_id", requestId);
    }

    Out set(String name, Object value) {
      values[contract.outputIndex(name)] = value;
      return this;
    }

    Row row() {
      return new GenericRowWithSchema(values, contract.output);
    }
  }
}
