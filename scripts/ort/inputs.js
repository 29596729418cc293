'use strict';
// Creation of model inputs: seeded random tensors (seeded per input name, so that two
// models with the same input names get the same values) or tensors from a JSON file.
const ort = require('onnxruntime-node');

const ELEM_TYPES = { 1: 'float32', 6: 'int32', 7: 'int64', 9: 'bool', 11: 'float64' };

function hashName(seed, name) {
  let h = (2166136261 ^ seed) >>> 0;  // FNV-1a
  for (const c of Buffer.from(name, 'utf8')) h = Math.imul(h ^ c, 16777619) >>> 0;
  return h;
}

function mulberry32(state) {
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function resolveShape(input, bindings) {
  if (!input.shape) throw new Error(`input '${input.name}' has no shape`);
  return input.shape.map((d, i) => {
    if (typeof d === 'number' && d > 0) return d;
    if (typeof d === 'string' && d in bindings) return bindings[d];
    const what = typeof d === 'string' ? `dim '${d}' has no binding (use --bind ${d}=N)` : `dim ${i} is unknown`;
    throw new Error(`input '${input.name}': ${what}`);
  });
}

// Largest valid index for an integer input read by Gather as indices: the gathered axis.
function gatherRange(model, name) {
  const dimsOf = (tensor) => {
    if (model.initializers.has(tensor)) return model.initializers.get(tensor);
    const input = model.inputs.find((i) => i.name === tensor);
    return input && input.shape;
  };
  let range = null;
  for (const node of model.nodes) {
    if (node.opType !== 'Gather' || node.inputs[1] !== name) continue;
    const dims = dimsOf(node.inputs[0]);
    const axis = node.attributes.axis || 0;
    const d = dims && dims[axis < 0 ? dims.length + axis : axis];
    if (typeof d === 'number' && d > 0) range = range === null ? d : Math.min(range, d);
  }
  return range;
}

// options: { bindings, seed, intRanges: {name: N} }
function randomInputs(model, options) {
  const parameters = new Set((model.metadata['symtensor.parameters'] || '').split(',').filter((s) => s));
  const feeds = {};
  for (const input of model.inputs) {
    const dtype = ELEM_TYPES[input.elemType];
    if (!dtype) throw new Error(`input '${input.name}': unsupported element type ${input.elemType}`);
    const shape = resolveShape(input, options.bindings);
    const size = shape.reduce((a, b) => a * b, 1);
    const rand = mulberry32(hashName(options.seed, input.name));
    if (dtype === 'float32' || dtype === 'float64') {
      // Parameters of weight-free models are scaled like a fan-in initialization.
      const scale = parameters.has(input.name) && shape.length >= 2 ? 1 / Math.sqrt(shape[shape.length - 2]) : 1;
      const data = dtype === 'float32' ? new Float32Array(size) : new Float64Array(size);
      for (let i = 0; i < size; ++i) data[i] = (2 * rand() - 1) * scale;
      feeds[input.name] = new ort.Tensor(dtype, data, shape);
    } else if (dtype === 'bool') {
      const data = new Uint8Array(size);
      for (let i = 0; i < size; ++i) data[i] = rand() < 0.5 ? 1 : 0;
      feeds[input.name] = new ort.Tensor('bool', data, shape);
    } else {
      const range = options.intRanges[input.name] || gatherRange(model, input.name);
      const positional = /position/.test(input.name);
      const last = shape[shape.length - 1] || 1;
      const values = new Array(size);
      for (let i = 0; i < size; ++i) {
        if (positional) values[i] = range ? (i % last) % range : i % last;  // 0, 1, ..., seq-1 per row
        else values[i] = Math.floor(rand() * (range || 2));                  // masks: 0/1
      }
      feeds[input.name] = dtype === 'int64'
        ? new ort.Tensor('int64', BigInt64Array.from(values, (v) => BigInt(v)), shape)
        : new ort.Tensor('int32', Int32Array.from(values), shape);
    }
  }
  return feeds;
}

function tensorToJson(tensor) {
  const data = Array.from(tensor.data, (v) => (typeof v === 'bigint' ? Number(v) : v));
  return { dtype: tensor.type, shape: Array.from(tensor.dims), data };
}

function tensorFromJson(name, entry) {
  const { dtype, shape, data } = entry;
  if (!dtype || !Array.isArray(shape) || !Array.isArray(data)) {
    throw new Error(`inputs file: '${name}' needs dtype, shape and data`);
  }
  const constructors = { float32: Float32Array, float64: Float64Array, int32: Int32Array, bool: Uint8Array };
  if (dtype === 'int64') return new ort.Tensor('int64', BigInt64Array.from(data, (v) => BigInt(v)), shape);
  if (!constructors[dtype]) throw new Error(`inputs file: '${name}' has unsupported dtype '${dtype}'`);
  return new ort.Tensor(dtype, constructors[dtype].from(data), shape);
}

module.exports = { randomInputs, tensorToJson, tensorFromJson, resolveShape };
