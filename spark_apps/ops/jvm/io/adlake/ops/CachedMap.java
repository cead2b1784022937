package io.adlake.ops;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.GenericRowWithSchema;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.types.StructType;

import scala.Tuple2;

/** A {@code MapState} keyed by an id, read at most once per call (one iteration), written
 * through. */
final class CachedMap {
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

  /** Clears the map; one read as empty in this call is not cleared again (a clear scans the
   * key's prefix in the state store). */
  void clear() {
    if (entries == null || !entries.isEmpty()) {
      state.clear();
    }
    entries = new LinkedHashMap<>();
  }
}

