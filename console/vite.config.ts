import { defineConfig } from "vite";

// Served under /console/ by the local stack (and by a static origin at the same path in AWS).
export default defineConfig({ base: "/console/", build: { outDir: "dist", chunkSizeWarningLimit: 600 } });
