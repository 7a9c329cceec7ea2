// Bundles src/main.ts into OUTDIR/app.js with esbuild (called by build.sh after the typecheck).
import * as esbuild from "esbuild";
import path from "node:path";
import process from "node:process";

const outdir = process.argv[2];
if (!outdir) {
  console.error("usage: node build.mjs OUTDIR");
  process.exit(2);
}

await esbuild.build({
  entryPoints: ["src/main.ts"],
  outfile: path.join(path.resolve(outdir), "app.js"),
  bundle: true,
  format: "iife",
  platform: "browser",
  target: "es2020",
  minify: true,
  sourcemap: false,
  legalComments: "none",
  charset: "utf8",
  logLevel: "warning",
});
