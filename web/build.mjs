// Copies the prebuilt GraphiQL, React and ReactDOM browser bundles from
// node_modules (pinned by package-lock.json) into dist/, which the Go
// binary embeds. No bundler: each package ships a ready-to-load file.
import { readFileSync, writeFileSync, mkdirSync, rmSync } from "node:fs";
import { createHash } from "node:crypto";

const assets = [
  ["react/umd/react.production.min.js", "react.production.min.js"],
  ["react-dom/umd/react-dom.production.min.js", "react-dom.production.min.js"],
  ["graphiql/dist/index.umd.js", "graphiql.min.js"],
  ["graphiql/dist/style.css", "graphiql.min.css"],
];
const licensed = ["react", "react-dom", "graphiql", "graphql"];

rmSync("dist", { recursive: true, force: true });
mkdirSync("dist");

const manifest = {};
for (const [from, to] of assets) {
  // Source maps are not shipped; drop the comments that would ask for them.
  const text = readFileSync(`node_modules/${from}`, "utf8")
    .replace(/\n?\/\/# sourceMappingURL=\S+\s*$/, "\n")
    .replace(/\n?\/\*# sourceMappingURL=\S+ \*\/\s*$/, "\n");
  writeFileSync(`dist/${to}`, text);
  manifest[to] = createHash("sha256").update(text).digest("hex").slice(0, 16);
}

let notices = "";
const versions = {};
for (const name of licensed) {
  const pkg = JSON.parse(readFileSync(`node_modules/${name}/package.json`, "utf8"));
  versions[name] = pkg.version;
  notices += `${name} ${pkg.version}\n${"=".repeat(name.length + pkg.version.length + 1)}\n`;
  notices += readFileSync(`node_modules/${name}/LICENSE`, "utf8").trim() + "\n\n";
}
writeFileSync("dist/THIRD_PARTY_LICENSES.txt", notices);
writeFileSync("dist/manifest.json", JSON.stringify({ versions, sha256: manifest }, null, 2) + "\n");
console.log("wrote dist/", versions);
