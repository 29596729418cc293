#!/usr/bin/env node
'use strict';
// ONNX Runtime (CPU) runner for SymTensor's numerical checks.
//
//   node run.js run MODEL.onnx [--bind batch=2,seq=8] [--seed 1] [--output OUT.json]
//   node run.js compare A.onnx B.onnx [--bind ...] [--seed 1] [--rtol 1e-4] [--atol 1e-5] [--json REPORT.json]
//
// Inputs are random (seeded per input name) unless --inputs FILE.json gives them
// ({name: {dtype, shape, data}}, the format --save-inputs and --output write). Integer
// inputs read by a Gather are drawn below the gathered table's size, inputs named
// *position* are 0..seq-1, other integer inputs are 0/1 (masks). Parameters of
// weight-free models (metadata `symtensor.parameters`) are random like any float input.
// `run` fails (exit 1) when an output is not finite or its shape differs from the declared
// one; `compare` fails when an output differs beyond |a-b| <= atol + rtol*|b|. Usage
// errors exit 2.
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const { parseModel } = require('./onnx_proto');
const { randomInputs, tensorToJson, tensorFromJson, resolveShape } = require('./inputs');

class UsageError extends Error {}

function parseArgs(argv) {
  const flags = { bind: '', seed: '1', rtol: '1e-4', atol: '1e-5', 'int-range': '', threads: '1' };
  const booleans = new Set(['allow-nonfinite', 'quiet']);
  const positional = [];
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (!a.startsWith('--')) { positional.push(a); continue; }
    const key = a.slice(2);
    if (booleans.has(key)) { flags[key] = true; continue; }
    if (!['bind', 'seed', 'rtol', 'atol', 'int-range', 'inputs', 'save-inputs', 'output', 'json', 'threads']
      .includes(key)) throw new UsageError(`unknown option '${a}'`);
    if (i + 1 >= argv.length) throw new UsageError(`option '${a}' needs a value`);
    flags[key] = argv[++i];
  }
  return { positional, flags };
}

// minimum 0 for --bind: a dim may be empty (a decode step's first token has a KV cache of length 0).
function parsePairs(text, what, minimum = 1) {
  const out = {};
  for (const part of text.split(',').filter((s) => s.trim())) {
    const m = /^\s*([^=\s]+)\s*=\s*(\d+)\s*$/.exec(part);
    if (!m || Number(m[2]) < minimum) throw new UsageError(`${what}: expected name=N with N >= ${minimum}, got '${part}'`);
    out[m[1]] = Number(m[2]);
  }
  return out;
}

function number(text, what) {
  const v = Number(text);
  if (!Number.isFinite(v) || v < 0) throw new UsageError(`${what}: expected a non-negative number, got '${text}'`);
  return v;
}

function writeJson(file, value) {
  const temp = `${file}.tmp`;
  fs.writeFileSync(temp, JSON.stringify(value));
  fs.renameSync(temp, file);
}

function loadModel(file) {
  let buf;
  try { buf = fs.readFileSync(file); } catch (e) { throw new UsageError(`cannot read model '${file}'`); }
  try { return parseModel(buf); } catch (e) { throw new UsageError(`'${file}' is not an ONNX model: ${e.message}`); }
}

function makeFeeds(model, options, given) {
  const missing = { ...model, inputs: model.inputs.filter((i) => !(i.name in given)) };
  const feeds = randomInputs(missing, options);
  for (const input of model.inputs) if (input.name in given) feeds[input.name] = given[input.name];
  return feeds;
}

async function runModel(file, feeds, threads) {
  const session = await ort.InferenceSession.create(file, { intraOpNumThreads: threads, interOpNumThreads: 1 });
  const results = await session.run(feeds);
  await session.release();
  return results;
}

// Problems with one output of `run`: non-finite values, shape unlike the declared one.
function outputProblems(declared, tensor, bindings, allowNonFinite) {
  const problems = [];
  if (declared && declared.shape) {
    const expected = declared.shape.map((d) => (typeof d === 'string' ? bindings[d] : d));
    const dims = Array.from(tensor.dims);
    const same = expected.length === dims.length && expected.every((d, i) => d === undefined || d === null || d === dims[i]);
    if (!same) problems.push(`shape [${dims}] differs from declared [${declared.shape}]`);
  }
  if (!allowNonFinite && tensor.type.startsWith('float')) {
    let bad = 0;
    for (const v of tensor.data) if (!Number.isFinite(v)) ++bad;
    if (bad) problems.push(`${bad} non-finite values`);
  }
  return problems;
}

function summary(tensor) {
  if (!tensor.type.startsWith('float')) return '';
  let min = Infinity, max = -Infinity, sum = 0;
  for (const v of tensor.data) { min = Math.min(min, v); max = Math.max(max, v); sum += v; }
  return ` min ${min.toPrecision(4)} max ${max.toPrecision(4)} mean ${(sum / tensor.data.length).toPrecision(4)}`;
}

function compareTensors(a, b, rtol, atol) {
  const r = { shape_a: Array.from(a.dims), shape_b: Array.from(b.dims), max_abs: 0, max_rel: 0, max_value: 0, mismatches: 0, ok: true };
  if (r.shape_a.join(',') !== r.shape_b.join(',')) return { ...r, ok: false, error: 'shapes differ' };
  for (let i = 0; i < a.data.length; ++i) {
    const x = Number(a.data[i]);
    const y = Number(b.data[i]);
    const diff = Math.abs(x - y);
    if (Number.isNaN(diff) ? !(Number.isNaN(x) && Number.isNaN(y)) : diff > atol + rtol * Math.abs(y)) ++r.mismatches;
    if (!Number.isNaN(diff)) {
      r.max_abs = Math.max(r.max_abs, diff);
      r.max_value = Math.max(r.max_value, Math.abs(y));
      if (Math.abs(y) > atol) r.max_rel = Math.max(r.max_rel, diff / Math.abs(y));
    }
  }
  r.ok = r.mismatches === 0;
  return r;
}

async function main(argv) {
  const [mode, ...rest] = argv;
  if (mode !== 'run' && mode !== 'compare') throw new UsageError("first argument must be 'run' or 'compare'");
  const { positional, flags } = parseArgs(rest);
  const files = positional;
  if (files.length !== (mode === 'run' ? 1 : 2)) {
    throw new UsageError(mode === 'run' ? 'run takes one model' : 'compare takes two models');
  }
  const bindings = parsePairs(flags.bind, '--bind', 0);
  const options = { bindings, seed: number(flags.seed, '--seed') >>> 0, intRanges: parsePairs(flags['int-range'], '--int-range') };
  const threads = Math.max(1, Math.floor(number(flags.threads, '--threads')));
  let given = {};
  if (flags.inputs) {
    let json;
    try { json = JSON.parse(fs.readFileSync(flags.inputs, 'utf8')); } catch (e) { throw new UsageError(`cannot read inputs file '${flags.inputs}': ${e.message}`); }
    for (const [name, entry] of Object.entries(json)) given[name] = tensorFromJson(name, entry);
  }
  const models = files.map(loadModel);
  const feedsA = makeFeeds(models[0], options, given);
  if (flags['save-inputs']) {
    writeJson(flags['save-inputs'], Object.fromEntries(Object.entries(feedsA).map(([n, t]) => [n, tensorToJson(t)])));
  }
  if (mode === 'run') {
    for (const input of models[0].inputs) resolveShape(input, bindings);
    const results = await runModel(files[0], feedsA, threads);
    let failed = false;
    const out = {};
    for (const [name, tensor] of Object.entries(results)) {
      const declared = models[0].outputs.find((o) => o.name === name);
      const problems = outputProblems(declared, tensor, bindings, flags['allow-nonfinite']);
      failed = failed || problems.length > 0;
      if (!flags.quiet || problems.length) {
        console.log(`${name}: ${tensor.type} [${Array.from(tensor.dims)}]${summary(tensor)}${problems.length ? ' FAIL: ' + problems.join('; ') : ''}`);
      }
      out[name] = tensorToJson(tensor);
    }
    if (flags.output) writeJson(flags.output, { model: path.resolve(files[0]), outputs: out });
    return failed ? 1 : 0;
  }
  const rtol = number(flags.rtol, '--rtol');
  const atol = number(flags.atol, '--atol');
  const feedsB = makeFeeds(models[1], options, feedsA);
  for (const name of Object.keys(feedsB)) if (!models[1].inputs.some((i) => i.name === name)) delete feedsB[name];
  for (const name of Object.keys(feedsA)) if (!models[0].inputs.some((i) => i.name === name)) delete feedsA[name];
  const [ra, rb] = [await runModel(files[0], feedsA, threads), await runModel(files[1], feedsB, threads)];
  const report = { a: path.resolve(files[0]), b: path.resolve(files[1]), rtol, atol, outputs: {}, ok: true };
  for (const name of Object.keys(ra)) {
    const r = name in rb ? compareTensors(ra[name], rb[name], rtol, atol) : { ok: false, error: `'${name}' missing in B` };
    report.outputs[name] = r;
    report.ok = report.ok && r.ok;
    const figures = r.error ? r.error : `max abs ${r.max_abs.toExponential(3)} (largest |value| ${r.max_value.toExponential(3)}) max rel ${r.max_rel.toExponential(3)} mismatches ${r.mismatches}`;
    console.log(`${name}: ${figures} ${r.ok ? 'OK' : 'FAIL'}`);
  }
  if (flags.json) writeJson(flags.json, report);
  console.log(report.ok ? 'outputs agree' : `outputs differ beyond rtol ${rtol}, atol ${atol}`);
  return report.ok ? 0 : 1;
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (e) => {
  console.error(`run.js: error: ${e.message}`);
  process.exitCode = e instanceof UsageError ? 2 : 1;
});
