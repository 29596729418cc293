'use strict';
// A minimal reader of the ONNX protobuf wire format: just what the runner needs to
// create inputs (graph inputs and their shapes, initializer shapes, node wiring,
// metadata). Tensor data is skipped, never decoded.

function readVarint(buf, pos) {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error('truncated varint');
    const byte = buf[pos++];
    result |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [result, pos];
    shift += 7n;
  }
}

// Calls visit(fieldNumber, wireType, value) for each field; value is a BigInt for varints
// and a Buffer slice for length-delimited fields.
function forEachField(buf, visit) {
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      let v;
      [v, pos] = readVarint(buf, pos);
      visit(field, wire, v);
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      const end = pos + Number(len);
      if (end > buf.length) throw new Error('truncated field');
      visit(field, wire, buf.subarray(pos, end));
      pos = end;
    } else if (wire === 1) {
      pos += 8;
    } else if (wire === 5) {
      pos += 4;
    } else {
      throw new Error(`unsupported wire type ${wire}`);
    }
  }
}

function int64s(wire, value, out) {
  if (wire === 0) { out.push(Number(BigInt.asIntN(64, value))); return; }
  let pos = 0;  // packed
  while (pos < value.length) {
    let v;
    [v, pos] = readVarint(value, pos);
    out.push(Number(BigInt.asIntN(64, v)));
  }
}

function parseValueInfo(buf) {
  const info = { name: '', elemType: 0, shape: null };
  forEachField(buf, (f, w, v) => {
    if (f === 1) info.name = v.toString('utf8');
    if (f !== 2) return;
    forEachField(v, (tf, tw, tv) => {  // TypeProto
      if (tf !== 1) return;  // tensor_type
      forEachField(tv, (ef, ew, ev) => {
        if (ef === 1) info.elemType = Number(ev);
        if (ef !== 2) return;
        info.shape = [];
        forEachField(ev, (df, dw, dv) => {  // TensorShapeProto.dim
          if (df !== 1) return;
          let dim = null;
          forEachField(dv, (xf, xw, xv) => {
            if (xf === 1) dim = Number(BigInt.asIntN(64, xv));
            if (xf === 2) dim = xv.toString('utf8');
          });
          info.shape.push(dim);
        });
      });
    });
  });
  return info;
}

function parseNode(buf) {
  const node = { inputs: [], outputs: [], opType: '', attributes: {} };
  forEachField(buf, (f, w, v) => {
    if (f === 1) node.inputs.push(v.toString('utf8'));
    else if (f === 2) node.outputs.push(v.toString('utf8'));
    else if (f === 4) node.opType = v.toString('utf8');
    else if (f === 5) {
      let name = '';
      let i = null;
      forEachField(v, (af, aw, av) => {
        if (af === 1) name = av.toString('utf8');
        if (af === 3) i = Number(BigInt.asIntN(64, av));
      });
      if (i !== null) node.attributes[name] = i;
    }
  });
  return node;
}

function parseInitializer(buf) {
  const t = { name: '', dims: [] };
  forEachField(buf, (f, w, v) => {
    if (f === 1) int64s(w, v, t.dims);
    if (f === 8) t.name = v.toString('utf8');
  });
  return t;
}

// Returns { inputs, outputs, initializers: Map name -> dims, nodes, metadata }.
function parseModel(buf) {
  const model = { inputs: [], outputs: [], initializers: new Map(), nodes: [], metadata: {} };
  forEachField(buf, (f, w, v) => {
    if (f === 14) {
      let key = '';
      let value = '';
      forEachField(v, (mf, mw, mv) => {
        if (mf === 1) key = mv.toString('utf8');
        if (mf === 2) value = mv.toString('utf8');
      });
      model.metadata[key] = value;
    }
    if (f !== 7) return;
    forEachField(v, (gf, gw, gv) => {
      if (gf === 1) model.nodes.push(parseNode(gv));
      else if (gf === 5) { const t = parseInitializer(gv); model.initializers.set(t.name, t.dims); }
      else if (gf === 11) model.inputs.push(parseValueInfo(gv));
      else if (gf === 12) model.outputs.push(parseValueInfo(gv));
    });
  });
  // Since IR 4 initializers may also be listed as inputs; those are not fed.
  model.inputs = model.inputs.filter((i) => !model.initializers.has(i.name));
  return model;
}

module.exports = { parseModel };
