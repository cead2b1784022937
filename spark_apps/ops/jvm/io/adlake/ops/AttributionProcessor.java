package io.adlake.ops;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
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
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.StatefulProcessorHandle;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.StructType;

import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The attribution rules on the JVM: a line-for-line port of the Python
 * {@code spark_apps/ops/attribution_processor.py}, whose module docstring states the rules
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
 * <p>Schemas (input, output, key and one per state variable) come from Python as JSON
 * ({@link Schemas}), so each is declared once; the constructor checks that every field this
 * class reads or writes by position is where it expects it.
 */
public final class AttributionProcessor extends StatefulProcessor<Row, Row, Row> {
  private static final long serialVersionUID = 1L;

  static final String REQUEST = "request", IMPRESSION = "impression", CALLBACK = "callback";
  static final String ATTRIBUTED_IMPRESSION = "attributed_impression";
  static final String ATTRIBUTED_CALLBACK = "attributed_callback";
  static final String REQUEST_CLOSED = "request_closed";
  static final String ORPHAN_IMPRESSION = "orphan_impression";
  static final String ORPHAN_CALLBACK = "orphan_callback";
  static final String REJECTED = "rejected";
  static final String[] DLQ_FIELDS =
      {"raw_value", "dlq_reason", "source_topic", "source_partition", "source_offset"};

  private final long windowMs, skewMs, ttlMs;
  private final boolean closeAtEndOfInput;
  private final Schemas schemas;

  private transient CachedValue request, timers, expiry;
  private transient CachedMap impressions, callbacks, closedIds;

  public AttributionProcessor(String schemasJson, long windowMs, long skewMs, long ttlMs,
                              boolean closeAtEndOfInput) {
    this.schemas = Schemas.parse(schemasJson);
    this.windowMs = windowMs;
    this.skewMs = skewMs;
    this.ttlMs = ttlMs;
    this.closeAtEndOfInput = closeAtEndOfInput;
  }

  public Schemas schemas() {
    return schemas;
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    StatefulProcessorHandle h = getHandle();
    request = new CachedValue(h.getValueState("request", Encoders.row(schemas.request),
                                              TTLConfig.NONE()));
    impressions = new CachedMap(h.getMapState("impressions", Encoders.row(schemas.idKey),
                                              Encoders.row(schemas.impression), TTLConfig.NONE()),
                                schemas.idKey);
    callbacks = new CachedMap(h.getMapState("callbacks", Encoders.row(schemas.idKey),
                                            Encoders.row(schemas.callback), TTLConfig.NONE()),
                              schemas.idKey);
    timers = new CachedValue(h.getValueState("timers", Encoders.row(schemas.timers),
                                             TTLConfig.NONE()));
    closedIds = new CachedMap(h.getMapState("closed_ids", Encoders.row(schemas.idKey),
                                            Encoders.row(schemas.closedId), TTLConfig.NONE()),
                              schemas.idKey);
    expiry = new CachedValue(h.getValueState("expiry", Encoders.row(schemas.expiry),
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

  private static int arrivalRank(String kind) {
    return REQUEST.equals(kind) ? 0 : IMPRESSION.equals(kind) ? 1 : 2;
  }

  private static final Comparator<Row> ARRIVAL_ORDER = Comparator
      .comparingLong((Row r) -> r.<Long>getAs("kafka_ts_ms"))
      .thenComparingInt(r -> arrivalRank(r.getAs("kind")))
      .thenComparingLong(r -> r.<Long>getAs("event_time_ms"))
      .thenComparing(r -> Objects.toString(r.getAs("impression_id"), ""))
      .thenComparing(r -> Objects.toString(r.getAs("callback_id"), ""));

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
    ordered.sort(ARRIVAL_ORDER);
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
      expiry.update(row(schemas.expiry, expireAt));
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
    } else if (REQUEST.equals(kind)) {
      onRequest(requestId, row, out);
    } else if (IMPRESSION.equals(kind)) {
      onImpression(requestId, row, out);
    } else {
      onCallback(requestId, row, out);
    }
  }

  private void onRequest(String requestId, Row row, List<Row> out) {
    if (request.exists()) {
      return;  // a duplicate request: the first one stands
    }
    request.update(row(schemas.request, row.getAs("event_time_ms"), row.getAs("kafka_ts_ms")));
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
    Row imp = row(schemas.impression, row.getAs("campaign_id"), row.getAs("creative_id"),
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
    Row cb = row(schemas.callback, row.getAs("impression_id"), row.getAs("event_type"),
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
    impressions.put(impId, row(schemas.impression, imp.get(0), imp.get(1), impMs, imp.get(3), true));
    out.add(new Out(ATTRIBUTED_IMPRESSION, requestId)
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
    callbacks.put(cbId, row(schemas.callback, impId, cb.get(1), cb.get(2), cbMs, cb.get(4), true));
    Row req = request.get();
    out.add(new Out(ATTRIBUTED_CALLBACK, requestId)
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
      timers.update(row(schemas.timers, closeAt, null));
      close(requestId, watermark, true, out);
      return;
    }
    getHandle().registerTimer(closeAt);
    timers.update(row(schemas.timers, closeAt, null));
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
      out.add(new Out(REQUEST_CLOSED, requestId).set("request_time_ms", req.getLong(0))
          .set("impressions", imps).set("callbacks", cbs).set("filled", imps > 0)
          .set("source_kafka_ts_ms", source).row());
      closed.put(requestId, REQUEST);
    }
    for (Map.Entry<String, Row> e : impressions.snapshot()) {
      Row imp = e.getValue();
      closed.put(e.getKey(), IMPRESSION);
      if (!imp.getBoolean(4)) {
        out.add(new Out(ORPHAN_IMPRESSION, requestId).set("impression_id", e.getKey())
            .set("campaign_id", imp.get(0)).set("creative_id", imp.get(1))
            .set("impression_time_ms", imp.getLong(2)).set("source_kafka_ts_ms", imp.getLong(3))
            .row());
      }
    }
    for (Map.Entry<String, Row> e : callbacks.snapshot()) {
      Row cb = e.getValue();
      closed.put(e.getKey(), CALLBACK);
      if (!cb.getBoolean(5)) {
        out.add(new Out(ORPHAN_CALLBACK, requestId).set("impression_id", cb.get(0))
            .set("callback_id", e.getKey()).set("event_type", cb.get(1)).set("value", cb.get(2))
            .set("callback_time_ms", cb.getLong(3)).set("source_kafka_ts_ms", cb.getLong(4))
            .row());
      }
    }
    Row t = timers.get();
    Long closeAt = t == null || t.isNullAt(0) ? null : t.getLong(0);
    clearAll();
    if (!tombstone) {
      return;
    }
    for (Map.Entry<String, String> e : closed.entrySet()) {
      closedIds.put(e.getKey(), row(schemas.closedId, e.getValue()));
    }
    // The tombstone lives one more window past whichever is later: the close time or now.
    long tombstoneUntil = Math.max(closeAt == null || closeAt == 0 ? watermark : closeAt,
                                   watermark) + windowMs;
    getHandle().registerTimer(tombstoneUntil);
    timers.update(row(schemas.timers, closeAt, tombstoneUntil));
  }

  /** An event for a key that was already closed: emitted at once (once), never dropped. */
  private void afterClose(String requestId, Row row, List<Row> out) {
    String kind = row.getAs("kind");
    String itemId = REQUEST.equals(kind) ? requestId
        : IMPRESSION.equals(kind) ? row.getAs("impression_id") : row.getAs("callback_id");
    if (closedIds.contains(itemId)) {
      return;  // already accounted for when the key closed
    }
    closedIds.put(itemId, row(schemas.closedId, kind));
    Object kafkaTs = row.getAs("kafka_ts_ms"), t = row.getAs("event_time_ms");
    if (REQUEST.equals(kind)) {
      out.add(new Out(REQUEST_CLOSED, requestId).set("request_time_ms", t).set("impressions", 0L)
          .set("callbacks", 0L).set("filled", false).set("source_kafka_ts_ms", kafkaTs).row());
    } else if (IMPRESSION.equals(kind)) {
      out.add(new Out(ORPHAN_IMPRESSION, requestId).set("impression_id", row.getAs("impression_id"))
          .set("campaign_id", row.getAs("campaign_id")).set("creative_id", row.getAs("creative_id"))
          .set("impression_time_ms", t).set("source_kafka_ts_ms", kafkaTs).row());
    } else {
      out.add(new Out(ORPHAN_CALLBACK, requestId).set("impression_id", row.getAs("impression_id"))
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
    Out o = new Out(REJECTED, row.getAs("request_id"))
        .set("source_kafka_ts_ms", row.getAs("kafka_ts_ms"));
    for (String name : DLQ_FIELDS) {
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
    private final Object[] values = new Object[schemas.output.length()];

    Out(String recordType, String requestId) {
      set("record_type", recordType).set("request_id", requestId);
    }

    Out set(String name, Object value) {
      values[schemas.outputIndex(name)] = value;
      return this;
    }

    Row row() {
      return new GenericRowWithSchema(values, schemas.output);
    }
  }

  /** A {@code ValueState} read at most once per call, written through. */
  private static final class CachedValue {
    private final ValueState<Row> state;
    private boolean loaded;
    private Row value;

    CachedValue(ValueState<Row> state) {
      this.state = state;
    }

    void reset() {
      loaded = false;
      value = null;
    }

    Row get() {
      if (!loaded) {
        value = state.exists() ? state.get() : null;
        loaded = true;
      }
      return value;
    }

    boolean exists() {
      return get() != null;
    }

    void update(Row v) {
      state.update(v);
      value = v;
      loaded = true;
    }

    void clear() {
      state.clear();
      value = null;
      loaded = true;
    }
  }

  /** A {@code MapState} keyed by an id, read at most once per call (one iteration), written
   * through. */
  private static final class CachedMap {
    private final MapState<Row, Row> state;
    private final StructType keySchema;
    private LinkedHashMap<String, Row> entries;

    CachedMap(MapState<Row, Row> state, StructType keySchema) {
      this.state = state;
      this.keySchema = keySchema;
    }

    void reset() {
      entries = null;
    }

    Map<String, Row> load() {
      if (entries == null) {
        entries = new LinkedHashMap<>();
        scala.collection.Iterator<Tuple2<Row, Row>> it = state.iterator();
        while (it.hasNext()) {
          Tuple2<Row, Row> kv = it.next();
          entries.put(kv._1().getString(0), kv._2());
        }
      }
      return entries;
    }

    /** A copy of the entries as they are now (the caller may update the map while iterating). */
    List<Map.Entry<String, Row>> snapshot() {
      List<Map.Entry<String, Row>> copy = new ArrayList<>();
      for (Map.Entry<String, Row> e : load().entrySet()) {
        copy.add(Map.entry(e.getKey(), e.getValue()));
      }
      return copy;
    }

    boolean contains(String id) {
      return load().containsKey(id);
    }

    Row get(String id) {
      return load().get(id);
    }

    void put(String id, Row value) {
      state.updateValue(new GenericRowWithSchema(new Object[] {id}, keySchema), value);
      load().put(id, value);
    }

    void clear() {
      state.clear();
      entries = new LinkedHashMap<>();
    }
  }

  /** Every schema the processor uses, parsed from the JSON Python sends (one source of truth). */
  public static final class Schemas implements java.io.Serializable {
    private static final long serialVersionUID = 1L;

    final StructType input, output, key, request, idKey, impression, callback, timers, closedId,
        expiry;
    private final HashMap<String, Integer> outputIndex = new HashMap<>();

    private Schemas(Map<String, StructType> s) {
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
      String[] names = output.fieldNames();
      for (int i = 0; i < names.length; i++) {
        outputIndex.put(names[i], i);
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

    /** The named schema; its leading fields must be {@code prefix}, in order: the processor
     * reads state rows by position. */
    private static StructType require(Map<String, StructType> s, String name, String... prefix) {
      StructType schema = s.get(name);
      if (schema == null) {
        throw new IllegalArgumentException("schemas JSON has no '" + name + "' schema");
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

    static Schemas parse(String json) {
      try {
        com.fasterxml.jackson.databind.ObjectMapper mapper =
            new com.fasterxml.jackson.databind.ObjectMapper();
        Map<String, StructType> parsed = new HashMap<>();
        var it = mapper.readTree(json).fields();
        while (it.hasNext()) {
          var e = it.next();
          parsed.put(e.getKey(), (StructType) org.apache.spark.sql.types.DataType.fromJson(
              e.getValue().toString()));
        }
        return new Schemas(parsed);
      } catch (java.io.IOException e) {
        throw new IllegalArgumentException("schemas JSON is not valid: " + e.getMessage(), e);
      }
    }
  }
}
