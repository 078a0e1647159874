import { defineConfig } from "vite";

// The server serves index.html at / and every other file under /ui/ (src/server/ui_endpoints.cc).
export default defineConfig({
  base: "/ui/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // The polyfill would be inline-free anyway, but no browser we support needs it.
    modulePreload: { polyfill: false },
    target: "es2020",
    assetsInlineLimit: 0, // no data: URLs, which the CSP's img-src would refuse
  },
});
