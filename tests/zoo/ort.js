#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// ONNX Runtime (npm onnxruntime-node, CPU, one thread) on one .npy input: float32 ('<f4'), or
// integer token ids ('<i8' int64, '<i4' int32; fed as the model input's integer type), C
// order; writes the one output as a float32 .npy. The reference runtime of test-zoo and of
// the text model in test-compiler (models/ort_run.js takes float32 only).
// usage: node tests/zoo/ort.js MODEL.onnx IN.npy OUT.npy
// onnxruntime-node from $ORT_NODE_MODULES, default build/node/node_modules (make ort-node).
// Any error: one line "ort: error: ..." on stderr, exit 1.
'use strict';
const fs = require('fs');
const path = require('path');

function fail(msg) {
    process.stderr.write(`ort: error: ${String(msg).replace(/\s+/g, ' ').trim()}\n`);
    process.exit(1);
}

function readNpy(file) {
    const buf = fs.readFileSync(file);
    if (buf.length < 10 || buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
    const major = buf[6];
    const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
    const hstart = major === 1 ? 10 : 12;
    const header = buf.toString('latin1', hstart, hstart + hlen);
    const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
    const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
    const shapeM = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
    if (!descr || !fortran || !shapeM || fortran[1] !== 'False') throw new Error(`${file}: unsupported .npy header`);
    const shape = shapeM[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
    const count = shape.reduce((a, b) => a * b, 1);
    const raw = buf.subarray(hstart + hlen);
    const copy = (n) => { const b = Buffer.alloc(n); raw.copy(b, 0, 0, n); return b.buffer; };
    if (descr[1] === '<f4') return { type: 'float32', shape, data: new Float32Array(copy(4 * count)) };
    if (descr[1] === '<i8') return { type: 'int64', shape, data: new BigInt64Array(copy(8 * count)) };
    if (descr[1] === '<i4') return { type: 'int32', shape, data: new Int32Array(copy(4 * count)) };
    throw new Error(`${file}: dtype '${descr[1]}', supported '<f4', '<i8', '<i4'`);
}

function writeNpy(file, shape, data) {
    let h = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
    const pad = 64 - ((10 + h.length + 1) % 64);
    h += ' '.repeat(pad % 64) + '\n';
    const head = Buffer.alloc(10);
    Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(head);
    head.writeUInt16LE(h.length, 8);
    fs.writeFileSync(file, Buffer.concat([head, Buffer.from(h, 'latin1'),
        Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

async function main() {
    const [model, inp, out] = process.argv.slice(2);
    if (!out) fail('usage: node tests/zoo/ort.js MODEL.onnx IN.npy OUT.npy');
    const mods = process.env.ORT_NODE_MODULES || path.join(__dirname, '..', '..', 'build', 'node', 'node_modules');
    const ort = require(path.join(mods, 'onnxruntime-node'));
    const x = readNpy(inp);
    const sess = await ort.InferenceSession.create(model, { intraOpNumThreads: 1, interOpNumThreads: 1 });
    let data = x.data, type = x.type;
    // an int32 file for a model whose input is int64 (torch exports token ids as int64)
    if (type === 'int32') { data = BigInt64Array.from(x.data, (v) => BigInt(v)); type = 'int64'; }
    const feeds = { [sess.inputNames[0]]: new ort.Tensor(type, data, x.shape) };
    const r = await sess.run(feeds);
    const y = r[sess.outputNames[0]];
    writeNpy(out, y.dims, y.data);
}

main().catch((e) => fail(e.message || e));
