#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Runs an ONNX model with ONNX Runtime (npm onnxruntime-node, CPU) on one float32 .npy input
// and writes its one output as a float32 .npy: the reference runtime of tests/models.
//
// usage: node models/ort_run.js MODEL.onnx IN.npy OUT.npy [--chunk K] [--threads T] [--time R]
//
//   The model must have one input and one output, both float32. IN.npy: float32
//   little-endian ('<f4'), C order, with the input's shape (any batch if the batch axis is
//   dynamic). --chunk K (default 256) runs the batch K rows at a time along axis 0 (the
//   results are the same; it bounds the memory of the intermediate tensors); --chunk 0 runs
//   it whole. --threads T (default 1): ORT's intra-op threads (inter-op 1, sequential).
//   --time R: then run the whole input R more times and print
//   "ort: N images in S s: I images/s (T threads, best of R)" (inference only, no file I/O).
// onnxruntime-node is loaded from $ORT_NODE_MODULES, default build/node/node_modules of this
// repository (`make ort-node` installs it there: tests/models/suite.mk). Any error: one line
// "ort_run: error: ..." on stderr, exit 1 (2 for a usage error); OUT.npy is then not written.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const PROG = 'ort_run';

class UsageError extends Error {}

// ORT's messages can span lines: one line, whitespace runs squeezed
function oneLine(msg) {
    return String(msg).replace(/\s+/g, ' ').trim();
}

function fail(msg, code) {
    process.stderr.write(`${PROG}: error: ${msg}\n`);
    process.exit(code === undefined ? 1 : code);
}

// ---- .npy: float32 little-endian C-order arrays only ----
const MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]); // \x93NUMPY

function readNpy(file) {
    let buf;
    try {
        buf = fs.readFileSync(file);
    } catch (e) {
        throw new Error(`${file}: cannot read: ${e.code || e.message}`);
    }
    if (buf.length < 10 || !buf.subarray(0, 6).equals(MAGIC)) {
        throw new Error(`${file}: not a .npy file (bad magic)`);
    }
    const major = buf[6];
    let hlen, hstart;
    if (major === 1) {
        hlen = buf.readUInt16LE(8); hstart = 10;
    } else if (major === 2 || major === 3) {
        if (buf.length < 12) throw new Error(`${file}: truncated .npy header`);
        hlen = buf.readUInt32LE(8); hstart = 12;
    } else {
        throw new Error(`${file}: unsupported .npy version ${major}.${buf[7]}`);
    }
    if (hstart + hlen > buf.length) throw new Error(`${file}: truncated .npy header`);
    const header = buf.toString(major === 3 ? 'utf8' : 'latin1', hstart, hstart + hlen);
    const descr = /['"]descr['"]\s*:\s*['"]([^'"]*)['"]/.exec(header);
    const fortran = /['"]fortran_order['"]\s*:\s*(True|False)/.exec(header);
    const shapeM = /['"]shape['"]\s*:\s*\(([^)]*)\)/.exec(header);
    if (!descr || !fortran || !shapeM) throw new Error(`${file}: malformed .npy header`);
    if (descr[1] !== '<f4') {
        throw new Error(`${file}: dtype '${descr[1]}', only float32 little-endian ('<f4') is supported`);
    }
    if (fortran[1] !== 'False') {
        throw new Error(`${file}: Fortran-order array, only C order is supported`);
    }
    const parts = shapeM[1].split(',').map((s) => s.trim()).filter((s) => s.length > 0);
    const shape = parts.map((s) => {
        if (!/^[0-9]+$/.test(s)) throw new Error(`${file}: malformed shape (${shapeM[1]})`);
        return Number(s);
    });
    const count = shape.reduce((a, b) => a * b, 1);
    const off = hstart + hlen;
    if (buf.length - off !== 4 * count) {
        throw new Error(`${file}: ${buf.length - off} data bytes, shape (${shape.join(', ')}) needs ${4 * count}`);
    }
    const data = new Float32Array(count);
    Buffer.from(data.buffer).set(buf.subarray(off, off + 4 * count));
    return { shape, data };
}

function writeNpy(file, shape, data) {
    const tuple = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
    let header = `{'descr': '<f4', 'fortran_order': False, 'shape': ${tuple}, }`;
    // numpy's layout: magic, version 1.0, uint16 length, header padded with spaces and ended
    // by '\n' so that the data starts on a multiple of 64 bytes
    const total = Math.ceil((10 + header.length + 1) / 64) * 64;
    header = header + ' '.repeat(total - 10 - header.length - 1) + '\n';
    const pre = Buffer.alloc(10);
    MAGIC.copy(pre, 0);
    pre[6] = 1; pre[7] = 0;
    pre.writeUInt16LE(header.length, 8);
    const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    const tmp = `${file}.tmp${process.pid}`;
    try {
        fs.writeFileSync(tmp, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
        fs.renameSync(tmp, file);
    } catch (e) {
        try { fs.unlinkSync(tmp); } catch (e2) { /* not there */ }
        throw new Error(`${file}: cannot write: ${e.code || e.message}`);
    }
}

// ---- command line ----
function parseArgs(argv) {
    const pos = [];
    const opt = { chunk: 256, threads: 1, time: 0 };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a === '--chunk' || a === '--threads' || a === '--time') {
            const v = argv[++i];
            if (v === undefined || !/^[0-9]+$/.test(v)) throw new UsageError(`${a} needs a count`);
            opt[a.slice(2)] = Number(v);
        } else if (a === '-h' || a === '--help') {
            process.stdout.write('usage: node models/ort_run.js MODEL.onnx IN.npy OUT.npy [--chunk K] [--threads T] [--time R]\n');
            process.exit(0);
        } else if (a.startsWith('-')) {
            throw new UsageError(`unknown option ${a}`);
        } else {
            pos.push(a);
        }
    }
    if (pos.length !== 3) throw new UsageError('usage: node models/ort_run.js MODEL.onnx IN.npy OUT.npy [--chunk K] [--threads T] [--time R]');
    if (opt.threads < 1) throw new UsageError('--threads must be >= 1');
    return { model: pos[0], input: pos[1], output: pos[2], ...opt };
}

function loadOrt() {
    const dir = process.env.ORT_NODE_MODULES || path.join(__dirname, '..', 'build', 'node', 'node_modules');
    const mod = path.join(dir, 'onnxruntime-node');
    if (!fs.existsSync(path.join(mod, 'package.json'))) {
        throw new Error(`onnxruntime-node is not installed in ${dir} (make ort-node installs it)`);
    }
    return require(mod);
}

async function main() {
    let args;
    try {
        args = parseArgs(process.argv.slice(2));
    } catch (e) {
        fail(e.message, 2);
    }
    if (os.endianness() !== 'LE') fail('this host is big-endian; only little-endian hosts are supported');
    try {
        const ort = loadOrt();
        const x = readNpy(args.input);
        if (!fs.existsSync(args.model)) throw new Error(`${args.model}: no such file`);
        let session;
        try {
            session = await ort.InferenceSession.create(args.model, {
                executionProviders: ['cpu'], intraOpNumThreads: args.threads,
                interOpNumThreads: 1, executionMode: 'sequential',
            });
        } catch (e) {
            throw new Error(`${args.model}: ONNX Runtime cannot load it: ${oneLine(e.message)}`);
        }
        if (session.inputNames.length !== 1 || session.outputNames.length !== 1) {
            throw new Error(`${args.model}: ${session.inputNames.length} inputs and ${session.outputNames.length} outputs, only 1 and 1 are supported`);
        }
        const inName = session.inputNames[0];
        const outName = session.outputNames[0];
        const runAll = async () => {
            const n = x.shape.length ? x.shape[0] : 1;
            const rowLen = x.shape.length ? x.shape.slice(1).reduce((a, b) => a * b, 1) : 1;
            const step = args.chunk > 0 && x.shape.length > 0 ? args.chunk : Math.max(n, 1);
            const pieces = [];
            let outShape = null;
            for (let i = 0; i < Math.max(n, 1); i += step) {
                const rows = Math.min(step, n - i);
                const shape = x.shape.length ? [rows, ...x.shape.slice(1)] : [];
                const t = new ort.Tensor('float32', x.data.subarray(i * rowLen, (i + rows) * rowLen), shape);
                let res;
                try {
                    res = await session.run({ [inName]: t });
                } catch (e) {
                    throw new Error(`${args.model}: run on ${args.input} (shape (${x.shape.join(', ')})) failed: ${oneLine(e.message)}`);
                }
                const y = res[outName];
                if (y.type !== 'float32') throw new Error(`${args.model}: output '${outName}' is ${y.type}, only float32 is supported`);
                const dims = y.dims.map(Number);
                if (step < n && dims[0] !== rows) {
                    throw new Error(`${args.model}: output batch ${dims[0]} for an input batch of ${rows}: cannot run it in chunks (try --chunk 0)`);
                }
                if (outShape === null) outShape = dims.slice();
                else outShape[0] += dims[0];
                pieces.push(y.data);
            }
            let out;
            if (pieces.length === 1) {
                out = pieces[0];
            } else {
                out = new Float32Array(pieces.reduce((a, p) => a + p.length, 0));
                let o = 0;
                for (const p of pieces) { out.set(p, o); o += p.length; }
            }
            return { outShape, out };
        };
        const { outShape, out } = await runAll();
        if (args.time > 0) {
            let best = Infinity;
            for (let r = 0; r < args.time; r++) {
                const t0 = process.hrtime.bigint();
                await runAll();
                best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
            }
            const n = x.shape.length ? x.shape[0] : 1;
            process.stdout.write(`ort: ${n} images in ${best.toFixed(3)} s: ${(n / best).toFixed(1)} images/s `
                + `(${args.threads} thread${args.threads > 1 ? 's' : ''}, best of ${args.time})\n`);
        }
        writeNpy(args.output, outShape, out);
        if (typeof session.release === 'function') await session.release();
    } catch (e) {
        fail(e.message);
    }
}

module.exports = { readNpy, writeNpy };

if (require.main === module) main();
