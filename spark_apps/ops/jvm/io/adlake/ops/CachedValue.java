package io.adlake.ops;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.ValueState;

/** A {@code ValueState} read at most once per call, written through. */
final class CachedValue {
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

  /** Clears the state; a value read as absent in this call is not cleared again (each clear is a
   * state-store write, and at a boundary every due timer clears its key). */
  void clear() {
    if (!loaded || value != null) {
      state.clear();
    }
    value = null;
    loaded = true;
  }
}

