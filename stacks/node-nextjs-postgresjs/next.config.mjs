/** @type {import('next').NextConfig} */
const nextConfig = {
  // API only: no ESLint in this project, so do not look for it during `next build`
  eslint: { ignoreDuringBuilds: true },
  // the driver is required from node_modules at run time, not bundled into the route chunks
  serverExternalPackages: ['postgres'],
  // `next start` gzips answers by default for clients that accept it; pgarena measures uncompressed
  // answers (its load generators ask for no content coding), so the stack does not compress
  compress: false,
}

export default nextConfig
