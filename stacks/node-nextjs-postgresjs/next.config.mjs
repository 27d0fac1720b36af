/** @type {import('next').NextConfig} */
const nextConfig = {
  // API only: no ESLint in this project, so do not look for it during `next build`
  eslint: { ignoreDuringBuilds: true },
  // the driver is required from node_modules at run time, not bundled into the route chunks
  serverExternalPackages: ['postgres'],
  // `compress` is on by default for `next start` (gzip for clients that accept it); pgarena measures
  // uncompressed answers, so it is off. (Measured with Next 15.5.28: route handlers' JSON was not
  // gzipped even with it on and Accept-Encoding: gzip, so this changes nothing today; it says the intent.)
  compress: false,
}

export default nextConfig
