import { createTheme, defaultVariantColorsResolver, Drawer, Modal, parseThemeColor, type VariantColorsResolver } from '@mantine/core';

/**
 * Light-variant controls (badges, active nav links, light buttons) in the light scheme: the palest tint as
 * background and the darkest shade, darkened further, as text, so every colour keeps 4.5:1 (Mantine's default text
 * is shade 6 on a 10 % tint, about 3:1).
 */
const variantColorResolver: VariantColorsResolver = (input) => {
  const colors = defaultVariantColorsResolver(input);
  if (input.variant !== 'light' && input.variant !== 'filled') return colors;
  const parsed = parseThemeColor({ color: input.color ?? input.theme.primaryColor, theme: input.theme });
  if (!parsed.isThemeColor) return colors;
  const c = parsed.color;
  // Filled controls hovered (a nav link under the pointer): darker than the darkest shade, not the lighter shade 8
  // Mantine would take (white on teal 8 is 3.9:1).
  if (input.variant === 'filled') return c === 'teal' ? { ...colors, hover: `color-mix(in srgb, var(--mantine-color-${c}-9), black 20%)` } : colors;
  return {
    ...colors,
    background: `light-dark(var(--mantine-color-${c}-0), var(--mantine-color-${c}-light))`,
    color: `light-dark(color-mix(in srgb, var(--mantine-color-${c}-9), black 30%), var(--mantine-color-${c}-light-color))`,
  };
};

/**
 * The console's theme. Contrast is checked by axe-core in the e2e test (WCAG AA): the darkest teal shade for
 * filled controls in both schemes, `autoContrast` so text on any filled colour (the orange sandbox badge) turns
 * black or white as the background needs, and dark text for light variants (above).
 */
export const theme = createTheme({
  primaryColor: 'teal',
  primaryShade: { light: 9, dark: 9 },
  autoContrast: true,
  variantColorResolver,
  defaultRadius: 'md',
  fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif',
  components: {
    // The close button of every dialog is an icon: give it a name.
    Modal: Modal.extend({ defaultProps: { closeButtonProps: { 'aria-label': 'Close' } } }),
    Drawer: Drawer.extend({ defaultProps: { closeButtonProps: { 'aria-label': 'Close' } } }),
  },
});
