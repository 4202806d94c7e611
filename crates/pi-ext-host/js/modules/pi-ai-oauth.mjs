// @earendil-works/pi-ai/oauth: Pi 1.6.0 exposes no runtime names here (types only).
export {};
