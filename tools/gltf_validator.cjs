// Runs the Khronos glTF-Validator (npm package gltf-validator) over the files named on the command line and prints
// one JSON object: file -> {errors, warnings, first}. Used by tools/validator_agreement.py.
// NODE_PATH must reach a node_modules with gltf-validator (e.g. `npm install --prefix DIR gltf-validator`).
const fs = require("fs");
const path = require("path");
const validator = require("gltf-validator");

async function main() {
  const out = {};
  for (const file of process.argv.slice(2)) {
    try {
      const report = await validator.validateBytes(new Uint8Array(fs.readFileSync(file)), {
        uri: path.basename(file),
        maxIssues: 20,
        externalResourceFunction: (uri) => new Promise((resolve, reject) => {
          fs.readFile(path.join(path.dirname(file), decodeURIComponent(uri)), (err, data) =>
            err ? reject(err.toString()) : resolve(new Uint8Array(data)));
        }),
      });
      const errs = report.issues.messages.filter((m) => m.severity === 0);
      out[file] = {errors: report.issues.numErrors, warnings: report.issues.numWarnings,
                   first: errs.length ? `${errs[0].code} ${errs[0].pointer || ""}: ${errs[0].message}` : null};
    } catch (e) {
      out[file] = {errors: 1, warnings: 0, first: `validator failed: ${e}`};
    }
  }
  process.stdout.write(JSON.stringify(out));
}
main();
